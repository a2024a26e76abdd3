// rlf merge: weight soups and task arithmetic of models with one architecture
// (model/merge.h), written as a Hugging Face directory.
#include <cstdio>
#include <iostream>

#include "apps/cli/commands.h"
#include "apps/cli/runtime.h"
#include "model/merge.h"
#include "util/error.h"
#include "util/write_target.h"

namespace rlf::cli {

namespace {

int run_merge(const Args& a) {
  configure_threads(a);
  MergeOptions o;
  for (const std::string& m : a.list("model")) o.models.push_back(m);
  check(o.models.size() >= 2 || (o.models.size() == 1 && a.given("base")),
        "rlf merge: give at least two --model DIR (or one with --base DIR)");
  for (const std::string& w : a.list("weight")) {
    double v = 0;
    size_t used = 0;
    try {
      v = std::stod(w, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    check(used == w.size() && used > 0, "rlf merge: --weight expects a number, got '", w, "'");
    o.weights.push_back(v);
  }
  if (a.given("base")) o.base = a.str("base");
  // --out, before any work: a directory or a new path, holding none of the inputs.
  std::vector<std::filesystem::path> inputs = o.models;
  if (o.base) inputs.push_back(*o.base);
  with_context("--out", [&] {
    check_dir_target(a.str("out"));
    check_not_an_input_dir(a.str("out"), inputs);
  });
  LoadedModel first;
  CausalLM merged = merge_models(o, &first);
  SaveOptions so;
  so.dtype = a.given("dtype") ? a.str("dtype") : first.config.torch_dtype;
  so.tokenizer_source = first.tokenizer;
  if (first.generation.bos_token_id || !first.generation.eos_token_ids.empty()) so.generation = first.generation;
  save_model(*merged, a.str("out"), so);
  std::cout << "merged " << o.models.size() << " models (" << (o.base ? "task arithmetic" : "weighted average")
            << ") -> " << a.str("out") << "\n";
  return 0;
}

}  // namespace

CommandSpec make_merge_command() {
  CommandSpec c;
  c.name = "merge";
  c.summary = "average models' weights (a soup) or add their differences to a base (task arithmetic)";
  c.options = {
      {"model", OptKind::List, "", "a model directory (repeat: at least two, or one with --base)", "DIR"},
      {"weight", OptKind::List, "", "one weight per --model, in order (default: 1/n each)", "W"},
      {"base", OptKind::String, "", "task arithmetic: base + sum_i w_i (model_i - base)", "DIR"},
      {"out", OptKind::String, "merged", "output directory (Hugging Face layout)", "DIR"},
      {"dtype", OptKind::String, "", "dtype written (default: the first model's)", "DTYPE"},
  };
  c.run = run_merge;
  return c;
}

}  // namespace rlf::cli

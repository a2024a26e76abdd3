// rlf convert: llama2.c checkpoint (or a HF directory of any supported family)
// -> Hugging Face directory (one file or shards).
#include <iostream>

#include "apps/cli/commands.h"
#include "apps/cli/runtime.h"
#include "model/loader.h"
#include "model/lora.h"
#include "util/error.h"
#include "util/write_target.h"

namespace rlf::cli {

namespace {

// "5GB", "500MB", "64KB" or a byte count (transformers' max_shard_size, in
// powers of 1000 as there); "" or "0": one file.
int64_t parse_shard_size(const std::string& text) {
  if (text.empty() || text == "0") return 0;
  size_t end = 0;
  double v = 0;
  try {
    v = std::stod(text, &end);
  } catch (const std::exception&) {
    end = 0;
  }
  const std::string unit = text.substr(end);
  double scale = 0;
  if (unit.empty() || unit == "B") scale = 1;
  else if (unit == "KB") scale = 1e3;
  else if (unit == "MB") scale = 1e6;
  else if (unit == "GB") scale = 1e9;
  check(end > 0 && scale > 0 && v > 0, "--max-shard-size '", text, "': expected a size such as 5GB, 500MB or 64KB");
  return static_cast<int64_t>(v * scale);
}

int run_convert(const Args& args) {
  configure_threads(args);
  const std::string in = args.positional().at(0), out = args.positional().at(1);
  // OUTPUT_DIR, before any work: a directory or a new path, holding none of the inputs.
  auto check_out = [&](const std::vector<std::filesystem::path>& inputs) {
    with_context("OUTPUT_DIR", [&] {
      check_dir_target(out);
      check_not_an_input_dir(out, inputs);
    });
  };
  check_out({in, args.str("merge-lora"), args.str("tokenizer")});
  LoadedModel m = load_model(in);
  check_out({m.tokenizer});  // the tokenizer found beside INPUT
  if (args.given("merge-lora")) {
    with_context("--merge-lora", [&] { load_lora_adapter(*m.model, args.str("merge-lora")); });
    merge_lora(*m.model);
  }
  SaveOptions so;
  so.dtype = args.str("dtype");
  so.max_shard_bytes = parse_shard_size(args.str("max-shard-size"));
  so.tokenizer_source = args.given("tokenizer") ? std::filesystem::path(args.str("tokenizer")) : m.tokenizer;
  if (m.format == "llama2c") {
    // llama2.c models mark the end of a story with BOS (run.c stops there).
    GenerationDefaults g;
    g.bos_token_id = 1;
    g.eos_token_ids = {2, 1};
    so.generation = g;
  } else if (m.generation.bos_token_id || !m.generation.eos_token_ids.empty()) {
    so.generation = m.generation;
  }
  save_model(*m.model, out, so);
  std::cout << "converted " << in << " (" << m.format << ")"
            << (args.given("merge-lora") ? " with the LoRA adapter " + args.str("merge-lora") + " merged" : std::string())
            << " -> " << out << " (Hugging Face, " << (so.dtype.empty() ? std::string("fp32") : so.dtype) << ")\n";
  return 0;
}

}  // namespace

CommandSpec make_convert_command() {
  CommandSpec c;
  c.name = "convert";
  c.summary = "convert a llama2.c checkpoint (or a HF directory) into a Hugging Face directory";
  c.usage = "INPUT OUTPUT_DIR";
  c.n_positional_min = c.n_positional_max = 2;
  c.options = {
      {"dtype", OptKind::String, "", "dtype written: fp32, bf16 or fp16 (default: fp32)", "DTYPE"},
      {"max-shard-size", OptKind::String, "", "write the weights as shards of at most this size (5GB, 500MB, ...) "
       "with model.safetensors.index.json, as transformers does; default: one model.safetensors", "SIZE"},
      {"tokenizer", OptKind::String, "", "tokenizer to copy alongside (default: the one next to INPUT)", "PATH"},
      {"merge-lora", OptKind::String, "", "a LoRA adapter directory (PEFT layout) to merge into INPUT: W + (alpha/r)·B·A, "
       "written as a full model", "DIR"},
  };
  c.run = run_convert;
  return c;
}

}  // namespace rlf::cli

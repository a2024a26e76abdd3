// rlf export --gguf OUT.gguf MODEL: a GGUF v3 file for llama.cpp (model/gguf.h).
#include <iostream>

#include "apps/cli/commands.h"
#include "apps/cli/runtime.h"
#include "model/gguf.h"
#include "model/lora.h"
#include "rollout/policy.h"
#include "util/error.h"
#include "util/write_target.h"

namespace rlf::cli {

namespace {

int run_export(const Args& args) {
  configure_threads(args);
  check(args.given("gguf"), "rlf export: give --gguf OUT.gguf (the only format so far)");
  const GgufType type = parse_gguf_type(args.str("type"));
  const std::string model = args.positional().at(0), out = args.str("gguf");
  // The target, before any work: a regular file or a new name, never one of the inputs.
  auto check_out = [&](const std::vector<std::filesystem::path>& inputs) {
    with_context("--gguf", [&] {
      check_file_target(out);
      check_not_an_input_file(out, inputs);
    });
  };
  check_out({model, args.str("tokenizer"), args.str("adapter")});
  Policy policy = load_policy(model, args.str("tokenizer"), LoadOptions{});
  check_out({policy.tokenizer_path});  // the tokenizer found beside the model
  apply_lora_adapter(*policy.model(), model, args.str("adapter"), "--adapter");
  export_gguf(*policy.model(), *policy.tokenizer, out, type, args.str("name"));
  std::cout << "exported " << model << " -> " << out << " (GGUF v3, " << args.str("type") << ", "
            << policy.tokenizer->vocab_size() << " tokens)\n";
  return 0;
}

}  // namespace

CommandSpec make_export_command() {
  CommandSpec c;
  c.name = "export";
  c.summary = "write a model as a GGUF file for llama.cpp (f32, f16 or q8_0, with its tokenizer)";
  c.usage = "MODEL";
  c.n_positional_min = c.n_positional_max = 1;
  c.options = {
      {"gguf", OptKind::String, "", "the GGUF file to write", "OUT.gguf"},
      {"type", OptKind::String, "f32", "tensor type of the matrices: f32, f16 or q8_0 (norms stay f32)", "TYPE"},
      {"tokenizer", OptKind::String, "", "tokenizer (default: the model's); a llama2.c tok*.bin", "PATH"},
      {"adapter", OptKind::String, "", "a LoRA adapter directory (PEFT layout) merged in first", "DIR"},
      {"name", OptKind::String, "rlf", "general.name in the file", "NAME"},
  };
  c.run = run_export;
  return c;
}

}  // namespace rlf::cli

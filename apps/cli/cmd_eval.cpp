// rlf eval: evaluate a model on a prompt dataset with rewards — pass@k,
// maj@k, mean reward, lengths, throughput — from flags or from the
// [model]/[data]/[[reward]]/[eval] sections of a (training) config.
// The logic lives in rlf_eval (eval/eval_config.h, eval/evaluator.h).
#include <iostream>

#include "apps/cli/commands.h"
#include "apps/cli/runtime.h"
#include "eval/eval_config.h"
#include "util/error.h"

namespace rlf::cli {

namespace {

// Flags that describe the run; with --config they are replaced by --set.
const std::vector<std::string>& run_flags() {
  static const std::vector<std::string> names = {"model", "tokenizer", "adapter", "data", "preset", "reward", "n",
                                                 "temperature", "top-p", "max-new-tokens", "max-prompts", "seed",
                                                 "dtype", "max-batch"};
  return names;
}

EvalConfig config_from_flags(const Args& args) {
  EvalFlags f;
  f.model = args.str("model");
  f.tokenizer = args.str("tokenizer");
  f.adapter = args.str("adapter");
  f.data = args.str("data");
  f.preset = args.str("preset");
  f.dtype = args.str("dtype");
  f.device = args.str("device");
  f.rewards = args.list("reward");
  if (args.given("n")) f.eval["n_samples"] = args.integer("n");
  if (args.given("temperature") && args.str("temperature") != "auto") {
    const std::string& t = args.str("temperature");
    double value = 0;
    size_t used = 0;
    try {
      value = std::stod(t, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    check(used == t.size() && used > 0, "rlf eval: --temperature expects a number >= 0 or auto, got '", t, "'");
    f.eval["temperature"] = value;
  }
  if (args.given("top-p")) f.eval["top_p"] = args.number("top-p");
  if (args.given("max-new-tokens")) f.eval["max_new_tokens"] = args.integer("max-new-tokens");
  if (args.given("max-prompts")) f.eval["max_prompts"] = args.integer("max-prompts");
  if (args.given("seed")) f.eval["seed"] = args.integer("seed");
  if (args.given("max-batch")) f.eval["max_batch_rows"] = args.integer("max-batch");
  return eval_config_from_json(eval_config_json_from_flags(f), "rlf eval");
}

EvalConfig config_from_file(const Args& args) {
  for (const std::string& name : run_flags())
    check(!args.given(name), "rlf eval: --", name, " cannot be combined with --config; set config values with --set ",
          "(e.g. --set eval.n_samples=8)");
  EvalConfig config = read_eval_config(args.str("config"), args.list("set"));
  if (args.given("device")) config.model.device = args.str("device");
  return config;
}

int run_eval_command(const Args& args) {
  check(args.given("config") || args.list("set").empty(), "rlf eval: --set needs --config FILE");
  const EvalConfig config = args.given("config") ? config_from_file(args) : config_from_flags(args);
  configure_threads(args, config.model.dtype, config.model.device);
  const bool json = args.flag("json");
  EvalRun run = run_eval(
      config, [](int64_t done, int64_t total) { std::cerr << "eval: " << done << "/" << total << " prompts\n"; },
      read_process_env);
  std::cerr << "eval data: " << run.data_summary << "\n";
  if (args.given("out")) {
    write_eval_details(args.str("out"), run.result);
    std::cerr << "eval details: " << args.str("out") << " (" << run.result.prompts.size() << " prompts)\n";
  }
  if (json) {
    std::cout << eval_summary_json(run.result).dump() << "\n";
  } else {
    std::cout << format_eval_report(run.result);
  }
  return 0;
}

}  // namespace

CommandSpec make_eval_command() {
  const EvalOptions d;
  CommandSpec c;
  c.name = "eval";
  c.summary = "evaluate a model on a prompt dataset with rewards: pass@k, maj@k, mean reward";
  c.options = {
      {"config", OptKind::String, "", "a TOML config: its [model], [data], [[reward]] and [eval] sections (docs/eval.md)", "FILE"},
      {"set", OptKind::List, "", "override a config value, e.g. eval.n_samples=8 (with --config)", "KEY=VALUE"},
      {"model", OptKind::String, "", "model: a Hugging Face directory or a llama2.c checkpoint (.bin)", "PATH"},
      {"tokenizer", OptKind::String, "", "tokenizer.json, a directory with one, or a llama2.c tok*.bin (default: the model's)", "PATH"},
      {"adapter", OptKind::String, "", "a LoRA adapter directory (PEFT layout) merged into --model first", "DIR"},
      {"data", OptKind::String, "", "prompt dataset: a JSONL or JSONL.gz file", "FILE"},
      {"preset", OptKind::String, "", "dataset preset: generic, gsm8k, math500 (with --data) or arithmetic, countdown (synthetic)", "NAME"},
      {"reward", OptKind::List, "", "reward type (the first one decides correctness); default: math for gsm8k/math500/arithmetic, countdown for countdown", "TYPE"},
      {"n", OptKind::Int, std::to_string(d.n_samples), "samples per prompt (the n of pass@k)", "N", 1, 65536},
      {"temperature", OptKind::String, "auto", "sampling temperature; auto = 0 (greedy) for --n 1, else 1.0", "T"},
      {"top-p", OptKind::Float, str(d.top_p), "nucleus sampling mass; 1 = off", "P", 1e-9, 1},
      {"max-new-tokens", OptKind::Int, std::to_string(d.max_new_tokens), "completion length limit in tokens", "N", 1, 1e7},
      {"max-prompts", OptKind::Int, std::to_string(d.max_prompts), "evaluate the first N prompts; 0 = all", "N", 0, 1e12},
      {"seed", OptKind::Int, std::to_string(d.seed), "random seed (same seed and options: same completions)", "N", 0, 9.2e18},
      {"dtype", OptKind::String, "", "compute dtype: auto (bf16 on a GPU, fp32 on a CPU), fp32, bf16 or fp16 (default: the config's model.dtype, auto)", "DTYPE"},
      {"max-batch", OptKind::Int, std::to_string(d.max_batch_rows), "sequences decoded together", "N", 1, 65536},
      {"json", OptKind::Flag, "false", "print one JSON object with the metrics (pass@k, maj@k, mean_reward, ...)", ""},
      {"out", OptKind::String, "", "write per-prompt details (samples, scores, verdicts) as JSONL", "FILE.jsonl"},
  };
  c.run = run_eval_command;
  return c;
}

}  // namespace rlf::cli

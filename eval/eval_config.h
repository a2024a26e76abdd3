// An evaluation run from a config: the [model], [data], [[reward]], [env] and
// [eval] sections a training config has (any other section, e.g. [grpo] or
// [optimizer], is ignored, so a training config evaluates as is), or the
// same structure built from `rlf eval` flags.
//
//   [model]   path, tokenizer, dtype, device
//   [data]    the prompt dataset table (data/prompt_dataset.h, docs/data.md);
//             the eval split when it holds one (eval_fraction / eval_size),
//             else every record
//   [[reward]] reward tables (rewards/registry.h);
//             none: the preset's default (gsm8k, math500, arithmetic: math;
//             countdown: countdown)
//   [env]     the environment (env/env_registry.h); none = single-turn
//   [eval]    EvalOptions (eval/eval_options.h)
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "data/prompt_dataset.h"
#include "env/env_registry.h"
#include "eval/eval_options.h"
#include "eval/evaluator.h"
#include "rewards/judge_reward.h"
#include "rewards/reward_set.h"
#include "config/config_schema.h"
#include "setup/run_setup.h"
#include "util/json_util.h"

namespace rlf {

struct EvalModelOptions {
  std::string path;            // HF directory or llama2.c .bin (required)
  std::string tokenizer;       // "" = the one stored with the model
  std::string dtype = "auto";  // auto ("" too): bf16 on a GPU, fp32 on a CPU; fp32 | bf16 | fp16
  std::string device = "cpu";  // cpu | cuda | cuda:N
  bool fast_cpu_path = true;   // CausalLMImpl::set_fast_cpu_path
  bool pack_weights = true;    // CausalLMImpl::set_pack_weights (decoding on packed weight panels)
  std::string adapter;         // a LoRA adapter directory merged in first ("" = none)
  std::string random_init;     // a training config's random initial model (named in the error for an empty path)
};

struct EvalConfig {
  EvalModelOptions model;
  PromptDatasetOptions data;
  Json rewards = Json::array();  // [[reward]] tables, the preset's default filled in when none were given
  EnvConfig env;                 // [env]: the environment episodes run in (default single-turn)
  EvalOptions eval;
  std::string source = "config";  // where it came from, for messages ("run.toml", "command line")
};

// The schema of the sections eval reads: model.*, data (validated by
// prompt_dataset_options_from_json), reward (validated by the registry), eval.*.
const ConfigSchema& eval_config_schema();

// Validates the sections eval reads (others are ignored) and builds the
// config. Errors name `source` and the key.
EvalConfig eval_config_from_json(const Json& config, const std::string& source);

// Reads a TOML config, applies "--set key=value" overrides (each must address
// [model], [data], [reward] or [eval]; new keys are allowed there) and builds it.
EvalConfig read_eval_config(const std::filesystem::path& path, const std::vector<std::string>& overrides);

// The [[reward]] tables used when a config gives none: [{"type": "math"}] for
// gsm8k, math500 and arithmetic, [{"type": "countdown"}] for countdown.
// Throws rlf::Error for a preset without a default (generic), saying to add one.
Json default_reward_tables(const std::string& preset);

// The prompts an evaluation uses: the eval split when it is non-empty, else train().
const std::vector<PromptExample>& eval_split(const PromptDataset& dataset);

// What `rlf eval` was given on its command line, before defaults.
struct EvalFlags {
  std::string model;                 // --model (required)
  std::string tokenizer;             // --tokenizer ("" = the model's)
  std::string adapter;               // --adapter ("" = none)
  std::string data;                  // --data FILE ("" = a synthetic preset)
  std::string preset;                // --preset ("" = generic with --data)
  std::string dtype;                 // --dtype ("" = default)
  std::string device = "cpu";        // --device
  std::vector<std::string> rewards;  // --reward TYPE, repeatable
  Json eval = Json::object();        // [eval] keys set by flags (--n -> n_samples, ...)
};

// The config (the JSON a TOML file would give) for `rlf eval` flags. Throws
// rlf::Error for a missing --model, neither --data nor a synthetic --preset,
// an unknown preset or reward type.
Json eval_config_json_from_flags(const EvalFlags& flags);

// The run set-up (setup/run_setup.h) an eval config describes: [model] with
// its adapter, [data], [[reward]], [env].
RunSpec run_spec_of(const EvalConfig& config, const ReadEnvironment& read_env = {});

// Loads the policy, the dataset and the rewards (load_run_setup), checks the
// evaluated records (check_records), then evaluates.
struct EvalRun {
  EvalResult result;
  std::string data_summary;  // PromptDataset::summary()
};
// `read_env` reads the environment variables a reward names (a judge's API key).
EvalRun run_eval(const EvalConfig& config, const EvalProgress& progress = nullptr, const ReadEnvironment& read_env = {});

}  // namespace rlf

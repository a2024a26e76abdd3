// The training configuration (`rlf train CONFIG.toml [--set key=value ...]`):
// one declarative schema lists every key with its type, default, unit and
// meaning; it validates configs (unknown keys, wrong types, missing required
// keys); schema_markdown(train_config_schema()) renders its reference table
// (docs/config.md is to be generated from it; until then the schema in
// train_config.cpp is the reference).
//
// Sections: [model] [data] [[reward]] [rollout] [algorithm] [optim] [run]
// and optionally [sft] (a supervised warm start before RL) and [eval].
// [data] and [sft] tables are validated by the data library's own parsers,
// [[reward]] tables by the reward registry.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "data/prompt_dataset.h"
#include "data/sft_dataset.h"
#include "train/config_schema.h"
#include "train/grpo_trainer.h"

namespace rlf {

// The schema of every key outside [data], [sft.data] and [[reward]].
const ConfigSchema& train_config_schema();

struct SftOptions {
  bool enabled = false;          // sft.data present
  SftDatasetOptions data;        // [sft.data]
  int64_t steps = 0;             // optimiser steps
  int64_t batch_size = 16;       // (prompt, response) pairs per step
  int64_t micro_batch_size = 16;
  double lr = 1e-3;
  // Stop early once greedy pass@1 on the first stop_eval_prompts training
  // prompts reaches stop_at_pass1, checked every stop_eval_every steps
  // (0 = run all `steps`): "weak but not hopeless" reached by measurement, not
  // by a step count that any numeric change would move.
  double stop_at_pass1 = 0.0;
  int64_t stop_eval_every = 25;
  int64_t stop_eval_prompts = 200;
};

struct TrainConfig {
  Json raw;                       // the validated config (defaults filled), saved with the run
  std::string source;             // where it came from (for messages)
  // [model]
  std::string model_path, tokenizer_path, dtype, device;
  bool fast_cpu_path = true;  // CausalLMImpl::set_fast_cpu_path for the policy and the reference
  // [data] and [[reward]]
  PromptDatasetOptions data;
  Json rewards;                   // array of reward tables
  // [rollout] [algorithm] [optim]
  GrpoOptions grpo;
  // [run]
  int64_t steps = 0;
  std::filesystem::path out_dir;
  int64_t checkpoint_every = 0;
  int64_t keep_checkpoints = 3;
  int64_t samples_every = 0;
  int64_t samples_per_step = 4;
  int64_t eval_every = 0;
  int64_t eval_samples = 1;
  int64_t threads = 0;
  bool add_special_tokens = true; // false when a chat template renders the prompt (it carries BOS)
  SftOptions sft;
};

// Reads a TOML file, applies --set overrides, validates everything and builds
// the options. Errors name the file and the key.
TrainConfig load_train_config(const std::filesystem::path& path, const std::vector<std::string>& overrides);

// Same, from an already parsed JSON object (the embedded demo, tests).
TrainConfig train_config_from_json(const Json& config, const std::string& source);

}  // namespace rlf

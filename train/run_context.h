// RunContext: what every kind of training run shares (train/run_kind.h) —
// the config, the ranks, the policy, the rewards and environment, the
// prompts (after the context and decontamination checks) and the SFT pairs —
// and the loading of them, every record checked before any step. The policy,
// the reward factories, the reward set with the environment and the record
// checks are the run set-up every entry point shares (setup/run_setup.h),
// from run_spec_of(cfg).
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "data/examples.h"
#include "data/prompt_dataset.h"
#include "data/prompt_format.h"
#include "env/environment.h"
#include "rewards/reward_set.h"
#include "rollout/policy.h"
#include "setup/run_setup.h"
#include "train/reducer.h"
#include "train/train_config.h"
#include "train/train_run.h"

namespace rlf {

struct RunContext {
  const TrainConfig& cfg;
  const TrainRunOptions& opts;
  Reducer& reducer;  // LocalReducer in one process
  Policy policy;
  TokenizerChat chat;  // the policy tokenizer's chat template, for the datasets
  std::unique_ptr<PromptDataset> data;
  std::vector<PromptExample> train, eval;  // after the prompt-length check
  RewardSet rewards;
  std::unique_ptr<Environment> env;
  std::vector<SftExample> sft_examples;  // [sft] enabled
  int64_t n_too_long = 0;        // prompts dropped for the context (data.on_bad_record = "skip")
  int64_t n_decontaminated = 0;  // training prompts dropped by curation.decontaminate

  // Only the writing rank (the one process here: Reducer) writes files.
  bool writer() const { return reducer.writes(); }
  void say(const std::string& s) const;
  // Greedy pass@1 on `examples` through the run's environment; -1 without examples.
  double greedy_pass1(const std::vector<PromptExample>& examples);
  // run.eval_kl_model: held-out KL(policy || that model) (train/heldout_kl.h); -1 when off or no eval split.
  double kl_to_model(const std::vector<PromptExample>& examples);
  // LoRA adapters (lora.init_from or fresh) on the policy, the base frozen from here on; logs them.
  void attach_lora();
};

// The run set-up a training config describes (setup/run_setup.h): [model]
// (model_path(), no adapter: LoRA training attaches its own), [data],
// [[reward]], [env]; `read_env` reads a judge's API key.
RunSpec run_spec_of(const TrainConfig& cfg, const ReadEnvironment& read_env = {});
// The same for `rlf reflexion` (feedback/reflexion.h): the policy in inference
// mode, and single-turn whatever [env] says (Reflexion's attempts are single-turn).
RunSpec reflexion_spec_of(const TrainConfig& cfg, const ReadEnvironment& read_env = {});

// The policy (model.random_init written first when missing), with the
// config's dtype, device and fast paths; the context around it empty.
RunContext load_run_context(const TrainConfig& cfg, const TrainRunOptions& opts, Reducer& reducer);
// [[reward]] (with the model, judge and self-certainty factories), the
// environment, and "env" as a reward component when the environment gives rewards.
void load_rewards_and_env(RunContext& r);
// [data] and [sft.data]: the prompts that fit the context, checked by every
// reward and the environment, and the SFT pairs outside the held-out prompts
// (both decontaminated with [curation] decontaminate).
void load_prompts_and_sft_pairs(RunContext& r);

// A frozen copy of `m` (same config, dtype, device, weights).
CausalLM frozen_copy(CausalLMImpl& m);

// The run's memory levers with auto checkpointing's threshold set from this
// machine (a quarter of util/memory_usage.h's usable_memory_bytes) where the
// config leaves it 0.
MemoryLevers memory_levers_here(const MemoryLevers& levers);

// The model at `path`, frozen, with the config's dtype, device and fast path.
CausalLM frozen_load(const std::filesystem::path& path, const TrainConfig& cfg);

}  // namespace rlf

// One run set-up for every entry point — `rlf train` (train/run_context.h),
// `rlf eval` (eval/eval_config.h), `rlf reflexion`, `rlf generate` and
// `rlf serve` — so that they cannot disagree. The stages, in the order a run
// takes them:
//
//   1. the policy and its flags (load_run_policy): the model and tokenizer,
//      dtype and device, a LoRA adapter merged in, the fast CPU path, packed
//      decoding weights, inference mode
//   2. the reward factories (run_reward_factories): the reward types built
//      outside the torch-free registry — trained reward models, LLM judges
//      (their API keys read through `read_env`) and the policy's own
//      self-certainty
//   3. the reward set and the environment (make_run_rewards): [[reward]]
//      with those factories, [env], and "env" as a reward component when the
//      environment gives rewards and no component is one already
//   4. the tokenizer's chat template and the prompt dataset (load_run_setup)
//   5. the record checks (check_records): every reward's and the
//      environment's check of each record the run uses, before anything runs
//
// An entry point describes its run as a RunSpec (from its config or its
// flags) and calls load_run_setup, or the stages it needs: a training run
// puts its own steps between them (the run kind's models, decontamination,
// the context check; train/run_context.h), `rlf generate` needs 1 and 2 and
// `rlf serve` 1 only.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "data/prompt_dataset.h"
#include "data/prompt_format.h"
#include "env/env_registry.h"
#include "env/environment.h"
#include "rewards/judge_reward.h"
#include "rewards/registry.h"
#include "rewards/reward_set.h"
#include "rollout/policy.h"
#include "util/json_util.h"

namespace rlf {

// [model]: what loads the policy.
struct PolicySpec {
  std::filesystem::path path;  // a Hugging Face directory or a llama2.c .bin (required)
  std::string tokenizer;       // "" = the one stored with the model
  std::string dtype;           // fp32 | bf16 | fp16 ("" = fp32 on a CPU), resolved by the entry point
  std::string device = "cpu";  // cpu | cuda | cuda:N
  bool fast_cpu_path = true;   // CausalLMImpl::set_fast_cpu_path
  bool pack_weights = true;    // CausalLMImpl::set_pack_weights (decoding on packed weight panels)
  bool inference = false;      // model()->eval(): nothing in this run trains the policy
  // A LoRA adapter merged in first (model/lora.h apply_lora_adapter; "" = none),
  // and the key or flag naming it in errors and notes ("--adapter");
  // adapter_key "" = this entry point takes no adapter.
  std::string adapter;
  std::string adapter_key;
};

// The policy with its flags: loaded, the adapter merged, the fast CPU path
// and weight packing set, in inference mode when asked.
Policy load_run_policy(const PolicySpec& spec);

// The reward types built outside the registry: model_reward_factories(),
// judge_reward_factories(read_env) and self_certainty_factories(policy).
// `policy` may be a slot filled once the policy loads (rewards are built
// first, so a bad table fails before the model loads).
RewardFactories run_reward_factories(const ReadEnvironment& read_env, std::shared_ptr<CausalLM> policy);

// The reward set and the environment of a run.
struct RunRewards {
  RewardSet rewards;
  std::unique_ptr<Environment> env;
};

// `tables` ([[reward]], none = an empty set) with `factories`, the
// environment of `env` (described as `source` [env]), and the component "env"
// (weight env.reward_weight) when the environment gives rewards and no
// component already is one.
RunRewards make_run_rewards(const Json& tables, const EnvConfig& env, const std::string& source,
                            const RewardFactories& factories);

// Every reward's and the environment's check of each record (rlf::Error naming
// the record's `where`); `env` may be null (no environment checks).
void check_records(const std::vector<PromptExample>& records, const RewardSet& rewards, const Environment* env);

// A run as its entry point describes it.
struct RunSpec {
  PolicySpec policy;           // [model]
  PromptDatasetOptions data;   // [data]
  Json rewards = Json::array();  // [[reward]] tables
  EnvConfig env;               // [env] (default: single-turn)
  std::string source = "config";  // where it came from, for messages
  ReadEnvironment read_env;    // reads environment variables (a judge's API key)
};

// Everything a run loads, in the order of the stages above.
struct RunSetup {
  Policy policy;
  TokenizerChat chat;  // the policy tokenizer's chat template, for the dataset
  std::unique_ptr<PromptDataset> data;
  RewardSet rewards;
  std::unique_ptr<Environment> env;
};

// Stages 1-4: the rewards and environment first (a bad table fails before the
// model loads), then the policy, its chat template and the dataset. The
// caller checks the records it uses (check_records).
RunSetup load_run_setup(const RunSpec& spec);

}  // namespace rlf

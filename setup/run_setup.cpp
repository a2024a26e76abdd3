#include "setup/run_setup.h"

#include <algorithm>

#include "model/lora.h"
#include "rewards/env_reward.h"
#include "rm/model_reward.h"
#include "rm/self_certainty_reward.h"
#include "util/error.h"

namespace rlf {

Policy load_run_policy(const PolicySpec& spec) {
  LoadOptions lo;
  lo.dtype = spec.dtype;
  lo.device = spec.device;
  Policy policy = load_policy(spec.path, spec.tokenizer, lo);
  if (!spec.adapter_key.empty()) apply_lora_adapter(*policy.model(), spec.path, spec.adapter, spec.adapter_key);
  policy.model()->set_fast_cpu_path(spec.fast_cpu_path);
  policy.model()->set_pack_weights(spec.pack_weights);
  if (spec.inference) policy.model()->eval();
  return policy;
}

RewardFactories run_reward_factories(const ReadEnvironment& read_env, std::shared_ptr<CausalLM> policy) {
  RewardFactories extra = model_reward_factories();
  extra.merge(judge_reward_factories(read_env));
  extra.merge(self_certainty_factories(std::move(policy)));
  return extra;
}

RunRewards make_run_rewards(const Json& tables, const EnvConfig& env, const std::string& source,
                            const RewardFactories& factories) {
  RunRewards r;
  if (!tables.empty()) r.rewards = make_reward_set(tables, source, factories);
  r.env = make_environment(env, source + " [env]");
  if (r.env->gives_rewards()) {
    const auto& c = r.rewards.components();
    if (std::none_of(c.begin(), c.end(), [](const RewardComponent& x) { return x.reward->name() == "env"; }))
      r.rewards.add("env", env.reward_weight, std::make_unique<EnvReward>());
  }
  return r;
}

void check_records(const std::vector<PromptExample>& records, const RewardSet& rewards, const Environment* env) {
  for (const PromptExample& ex : records) {
    rewards.check_record(ex.record, ex.reference, ex.where);
    if (env) env->check_record(ex);
  }
}

RunSetup load_run_setup(const RunSpec& spec) {
  auto policy_slot = std::make_shared<CausalLM>(nullptr);
  RunRewards rr = make_run_rewards(spec.rewards, spec.env, spec.source, run_reward_factories(spec.read_env, policy_slot));
  Policy policy = load_run_policy(spec.policy);
  *policy_slot = policy.model();
  RunSetup s{std::move(policy), {}, nullptr, std::move(rr.rewards), std::move(rr.env)};
  s.chat = tokenizer_chat_of(*s.policy.tokenizer);
  s.data = std::make_unique<PromptDataset>(PromptDataset::load(spec.data, &s.chat));
  return s;
}

}  // namespace rlf

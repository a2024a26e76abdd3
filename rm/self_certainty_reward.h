// The reward "self_certainty": the policy's own confidence in what it wrote,
// a label-free reward (Intuitor, Zhao et al. 2025, "Learning to Reason
// without External Rewards"; Kang et al. 2025 for best-of-n selection):
//
//   [[reward]]
//   type = "self_certainty"
//   micro_batch_size = 4        # sequences per forward (each holds a [T, V] logits tensor)
//   normalize = "none"          # "none" | "group": (s - group mean) / (group std + 1e-6)
//
// score = (1/n) sum_t KL(U || p_t) over the sample's policy tokens
// (algorithms/entropy.h self_certainty), p_t the next-token distribution
// of the policy that is being trained, read from the exact token ids it
// sampled (prompt + completion: nothing re-tokenized). The model is the
// run's policy itself (shared weights, no copy), so the reward follows the
// policy as it learns; a sample without token ids is a missing score.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "model/transformer.h"
#include "rewards/registry.h"

namespace rlf {

struct SelfCertaintyOptions {
  int64_t micro_batch_size = 4;
  std::string normalize = "none";
};

class SelfCertaintyReward final : public Reward {
 public:
  // `model` holds the policy (kept alive by the CausalLM handle); it may be
  // filled after the reward is built (rlf eval builds rewards first), and
  // must be set before the first score().
  SelfCertaintyReward(std::shared_ptr<CausalLM> model, SelfCertaintyOptions options);
  std::string name() const override { return "self_certainty"; }
  std::vector<RewardResult> score(const RewardGroup& group) override;

 private:
  std::shared_ptr<CausalLM> model_;
  SelfCertaintyOptions options_;
};

// {"self_certainty": factory} for make_reward_set's `extra`, scoring with
// the model in `policy` (set now or before the first score).
RewardFactories self_certainty_factories(std::shared_ptr<CausalLM> policy);

}  // namespace rlf

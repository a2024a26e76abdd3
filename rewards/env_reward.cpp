#include "rewards/env_reward.h"

namespace rlf {

std::vector<RewardResult> EnvReward::score(const RewardGroup& group) {
  std::vector<RewardResult> out;
  for (const RewardSample& s : group.samples) {
    RewardResult r;
    r.score = s.env_reward;
    if (!r.score)
      r.missing_reason = s.env_missing_reason.empty() ? "the environment gave no reward" : s.env_missing_reason;
    else
      r.explanation = s.env_explanation;
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace rlf

// The `env` reward: the environment's own rewards as a reward component.
// An environment that gives rewards per step (a game won, a turn penalty;
// env/environment.h) reports their sum for each episode in
// RewardSample::env_reward; this component scores exactly that, and is
// missing (with the environment's reason) when the environment failed or
// gave no reward. A run whose environment gives rewards gets this component
// named "env" with weight [env] weight unless the config lists one itself.
// No options besides name and weight.
#pragma once

#include "rewards/reward.h"

namespace rlf {

class EnvReward : public Reward {
 public:
  std::string name() const override { return "env"; }
  std::vector<RewardResult> score(const RewardGroup& group) override;
};

}  // namespace rlf

// The `countdown` reward: 1 when the completion's answer (the
// expression after the last "####", data/countdown.h's countdown_answer)
// reaches the record's target using only its numbers (verify_countdown),
// else 0. The record must hold "numbers" and "target" (the countdown preset's
// records do). No options besides the reward set's name and weight.
//
// Registry type "countdown" (rewards/registry.h); trainable with `rlf train`.
#pragma once

#include "rewards/reward.h"

namespace rlf {

class CountdownReward : public Reward {
 public:
  std::string name() const override { return "countdown"; }
  std::vector<RewardResult> score(const RewardGroup& group) override;
  void check_record(const Json& record, const std::string& reference, const std::string& where) const override;
};

}  // namespace rlf

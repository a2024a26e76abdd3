// The reward "majority": label-free, from the group itself (TTRL, Zuo et al.
// 2025, "TTRL: Test-Time Reinforcement Learning"). The completions' final
// answers are clustered by the math verifier's equivalence
// (rewards/math/majority_vote.h); the largest cluster's answer is the
// pseudo-label (ties: the cluster whose first member comes first), and a
// completion scores `correct_score` when its answer is in that cluster,
// `incorrect_score` otherwise (no answer included). No reference answer is
// read, so it trains on unlabelled prompts (test-time RL).
//
//   [[reward]]
//   type = "majority"
//   answer_format = "auto"     # auto | gsm8k | boxed | answer_is | last_number
//   min_share = 0.0            # the winner's share of the group below this: every score is
//                              #   missing (no pseudo-label, no gradient from this group)
//   correct_score = 1.0
//   incorrect_score = 0.0
//
// A group where no completion has an answer has no pseudo-label: every score
// is missing, with the reason.
#pragma once

#include <string>
#include <vector>

#include "rewards/math/answer_extract.h"
#include "rewards/reward.h"
#include "rewards/reward_options.h"

namespace rlf {

struct MajorityRewardOptions {
  std::string answer_format = "auto";
  double min_share = 0.0;
  double correct_score = 1.0;
  double incorrect_score = 0.0;
};

MajorityRewardOptions read_majority_options(OptionReader& reader);

class MajorityReward final : public Reward {
 public:
  explicit MajorityReward(MajorityRewardOptions options = {});
  std::string name() const override { return "majority"; }
  std::vector<RewardResult> score(const RewardGroup& group) override;

 private:
  MajorityRewardOptions options_;
  math::AnswerFormat format_;
};

}  // namespace rlf

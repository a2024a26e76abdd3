// The `length` reward: a score from the completion's length |y| (tokens by
// default). Two modes:
//
//   overlong  DAPO's soft overlong punishment (Yu et al. 2025, eq. 13), with
//             L_max = max_length and L_cache = cache_length:
//               R = 0                                  |y| <= L_max - L_cache
//               R = ((L_max - L_cache) - |y|) / L_cache   L_max - L_cache < |y| <= L_max
//               R = -1                                 |y| > L_max
//             times penalty_factor (R falls linearly from 0 to -1 over the cache).
//   linear    R = coef * min(|y|, L_max) / L_max: coef < 0 is a length
//             penalty in [coef, 0], coef > 0 a length bonus in [0, coef].
//
// L_max defaults to the group's max_new_tokens; L_cache to L_max / 5 (the
// paper's 4,096 of 20,480). Explanations give the length and the band:
// "length 120 <= 16384 tokens: no penalty".
#pragma once

#include <cstdint>
#include <string>

#include "rewards/reward.h"
#include "rewards/reward_options.h"

namespace rlf {

struct LengthRewardOptions {
  std::string mode = "overlong";  // "overlong" (DAPO) | "linear"
  int64_t max_length = 0;         // L_max, in `unit`s; 0 = the group's max_new_tokens
  int64_t cache_length = 0;       // overlong: L_cache, in `unit`s; 0 = L_max / 5; must be < L_max
  double penalty_factor = 1.0;    // overlong: multiplies R (the score at L_max is -penalty_factor)
  double coef = -1.0;             // linear: the score at |y| = L_max (negative = penalty)
  std::string unit = "tokens";    // "tokens" (completion_ids) | "chars" (bytes of UTF-8 text)
};

void validate(const LengthRewardOptions& options);
LengthRewardOptions read_length_options(OptionReader& reader);

// DAPO's R for a length, given L_max and L_cache (0 < L_cache <= L_max).
double dapo_overlong_penalty(int64_t length, int64_t max_length, int64_t cache_length);

class LengthReward : public Reward {
 public:
  explicit LengthReward(LengthRewardOptions options = {});
  std::string name() const override { return "length"; }
  std::vector<RewardResult> score(const RewardGroup& group) override;

 private:
  RewardResult score_one(int64_t length, int64_t max_length, int64_t cache_length) const;
  LengthRewardOptions options_;
};

}  // namespace rlf

// Diagnostics of a step's scored groups, against reward hacking and
// collapse (logged as diag/* every RL step; docs/training.md):
//
//   diag/reward_length_corr   Pearson correlation of episode reward and
//                             completion length (a reward that pays for
//                             length, or a policy that learnt to pad)
//   diag/group_reward_std     mean within-group standard deviation of the
//                             rewards (the signal GRPO-style baselines see)
//   diag/zero_variance_frac   share of groups whose rewards are all equal
//                             (no gradient from a group baseline)
//   diag/pass_at_group        share of groups with at least one correct
//                             episode (pass@G of the step)
//   diag/distinct_frac        mean share of distinct completions in a group
//                             (1 = all different; falls as diversity collapses)
//
// Rollout episodes only (refinements and replay are not samples of the
// policy's distribution), with a reward where a reward is needed. Computed
// from sums that ranks add through the Reducer, so N ranks report what one
// process over the union of their groups would.
//
// GoldRewardWatch (algorithm.gold_reward): a held-out "gold" reward component
// (weight 0, so it never trains) watched against the trained ("proxy")
// reward: a warning when, over the last 2 x window steps, the proxy's mean
// rose while the gold's fell (Gao et al. 2022, reward-model over-optimisation).
#pragma once

#include <array>
#include <cstddef>
#include <deque>
#include <optional>
#include <string>
#include <vector>

#include "env/scored_group.h"
#include "util/json_util.h"

namespace rlf {

// A rank's sums over its groups, summed across ranks in one call
// (Reducer::sum_fields) before diagnostics_from_sums.
struct DiagnosticSums {
  double n = 0;              // episodes with a reward
  double x = 0;              // sum of rewards
  double y = 0;              // sum of lengths
  double xy = 0, xx = 0, yy = 0;
  double groups = 0;         // groups with at least two rewarded episodes
  double std_sum = 0;        // sum of their reward standard deviations (population)
  double zero_var = 0;       // of those, groups whose rewards are all equal
  double judged = 0;         // groups with at least one judged episode
  double any_correct = 0;    // of those, groups with a correct episode
  double distinct = 0;       // sum over groups of (distinct completions / rollout episodes)
  double with_episodes = 0;  // groups with at least one rollout episode
};

// This rank's sums over `groups`; `accuracy_component` decides correctness (is_correct).
DiagnosticSums diagnostic_sums(const std::vector<ScoredGroup>& groups, size_t accuracy_component);

// The diag/* metrics from (globally summed) sums; a metric without data is left out.
Json diagnostics_from_sums(const DiagnosticSums& sums);

class GoldRewardWatch {
 public:
  // `window` steps per half (>= 1); a change smaller than `tolerance` is no change.
  GoldRewardWatch(std::string gold_name, int64_t window = 10, double tolerance = 0.02);
  // A step's proxy (reward/mean) and gold (reward/<gold>/mean) means; returns
  // a warning once the last window's proxy mean exceeds the window before it
  // by more than the tolerance while the gold mean fell by more than it. At
  // most one warning per window of steps.
  std::optional<std::string> add(int64_t step, double proxy, double gold);

 private:
  std::string gold_name_;
  size_t window_;
  double tolerance_;
  std::deque<std::pair<double, double>> history_;  // the last 2 x window (proxy, gold)
  int64_t last_warning_ = -1;
};

}  // namespace rlf

// Combining several reward components into one reward per sample, as TRL's
// GRPOTrainer does (GRPOConfig.multi_objective_aggregation):
//
//   sum_then_normalize  total_i = sum_c w_c * r_ic over the components that
//                       scored sample i (missing ones are skipped, like
//                       torch.nansum); the trainer then normalises the totals
//                       within the group (the GRPO advantage).
//   normalize_then_sum  each component is first normalised within the group,
//                       z_ic = (r_ic - mean_c) / (std_c + eps), with mean and
//                       sample standard deviation (n - 1) over the samples it
//                       scored (std = 0 when fewer than two), then
//                       total_i = sum_c w_c * z_ic over the components present;
//                       TRL then normalises the totals over the whole batch
//                       (not per group) to get advantages (the trainer's job).
//
// A sample that no component scored has no total (std::nullopt): it gets
// zero advantage and the caller logs it.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace rlf {

enum class RewardAggregation { sum_then_normalize, normalize_then_sum };

// "sum_then_normalize" / "normalize_then_sum".
const char* aggregation_name(RewardAggregation mode);
std::vector<std::string> aggregation_names();  // "sum_then_normalize", "normalize_then_sum"
// Parses a name; throws rlf::Error listing the valid names.
RewardAggregation parse_aggregation(const std::string& name);

// The epsilon added to a component's std in normalize_then_sum (TRL's 1e-4).
inline constexpr double kRewardStdEps = 1e-4;

// Scores of one group: scores[i][c] for sample i, component c (nullopt = missing).
using ComponentMatrix = std::vector<std::vector<std::optional<double>>>;

// The per-sample totals of one group. `weights` has one entry per component;
// every row of `scores` must have that many entries (throws rlf::Error otherwise).
std::vector<std::optional<double>> aggregate_rewards(const ComponentMatrix& scores, const std::vector<double>& weights,
                                                     RewardAggregation mode, double std_eps = kRewardStdEps);

}  // namespace rlf

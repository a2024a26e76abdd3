// Advantages for outcome rewards: one scalar reward per sample (completion),
// samples of the same prompt share a group id. Pure functions, no state.
//
//   rewards[i]    reward of sample i, std::nullopt when it is missing (the
//                 verifier failed, timed out, ...). Present rewards must be finite.
//   group_ids[i]  any integer label; samples with the same label form a group
//                 (they need not be contiguous).
//
// A sample with a missing reward gets advantage 0 and is left out of every
// statistic (group and batch mean/std). Formulas, papers and the conventions
// for groups of one sample are in docs/algorithms.md.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string_view>
#include <string>
#include <vector>

#include <torch/types.h>

namespace rlf::algo {

enum class AdvantageEstimator {
  Grpo,                 // "grpo":    (r - group mean) / (group std + eps)       [Shao et al. 2024]
  DrGrpo,               // "dr_grpo": r - group mean                           [Liu et al. 2025]
  BatchStd,             // "batch_std": (r - group mean) / (batch std + eps)   [TRL scale_rewards="batch"]
  Rloo,                 // "rloo":    r - mean of the other samples of the group [Ahmadian et al. 2024]
  ReinforcePP,          // "reinforce_pp": (r - batch mean) / (batch std + eps) [Hu 2025]
  ReinforcePPBaseline,  // "reinforce_pp_baseline": r - group mean, then whitened over the batch [Hu 2025]
};

// "grpo", "dr_grpo", "batch_std", "rloo", "reinforce_pp", "reinforce_pp_baseline".
AdvantageEstimator parse_advantage_estimator(std::string_view name);
std::string_view advantage_estimator_name(AdvantageEstimator estimator);
std::vector<std::string> advantage_estimator_names();  // every name, in the order docs list them

struct AdvantageOptions {
  // Which estimator (see the enum).
  AdvantageEstimator estimator = AdvantageEstimator::Grpo;
  // Added to a standard deviation before dividing by it (grpo, batch_std,
  // reinforce_pp, reinforce_pp_baseline). 1e-4 as in TRL (verl uses 1e-6).
  double std_eps = 1e-4;

  // Throws rlf::Error naming the bad field.
  void validate() const;
};

// The data-parallel seam for batch statistics: sums `values` element-wise
// across ranks, in place. Empty (the default) = one process, nothing to add.
// Group statistics never need it: a group's samples live on one rank.
using BatchSum = std::function<void(std::span<double> values)>;

// Every estimator is a baseline and a scale per sample:
//   advantage_i = (r_i - baseline_i) / scale_i      (0 when !has_baseline)
// which turn- and token-level credit (credit.h) apply to returns other than r_i.
struct AdvantageBaseline {
  bool has_baseline = false;  // false: the sample's reward is missing, or its group has < 2 present rewards
  double baseline = 0.0;
  double scale = 1.0;
};

// One entry per sample. Batch statistics (batch_std, reinforce_pp,
// reinforce_pp_baseline) are summed through `batch_sum` (two passes: counts
// and sums, then squared deviations), so N ranks compute what one process
// computes over the union of their samples.
std::vector<AdvantageBaseline> advantage_baselines(std::span<const std::optional<double>> rewards,
                                                   std::span<const int64_t> group_ids,
                                                   const AdvantageOptions& options = {},
                                                   const BatchSum& batch_sum = {});

// Per-sample advantages, same length as `rewards`: (r - baseline) / scale
// from advantage_baselines. Throws when the lengths of rewards and group_ids
// differ or a present reward is not finite.
std::vector<double> compute_advantages(std::span<const std::optional<double>> rewards,
                                       std::span<const int64_t> group_ids,
                                       const AdvantageOptions& options = {}, const BatchSum& batch_sum = {});

// Dynamic sampling (DAPO, Yu et al. 2025): the groups whose present rewards
// are all equal (zero variance), so every estimator gives them advantage 0
// and they carry no gradient. Groups with fewer than two present rewards are
// included. The trainer drops these groups and samples new prompts instead.
// Group ids are returned once each, in order of first appearance.
std::vector<int64_t> zero_variance_groups(std::span<const std::optional<double>> rewards,
                                          std::span<const int64_t> group_ids);

// Broadcasts per-sample values (e.g. advantages) to the sample's completion
// tokens: out[b][t] = per_sample[b] where mask[b][t] != 0, else 0.
//   per_sample  B values
//   mask        [B, T], any dtype; nonzero marks a completion (loss) token
// Returns [B, T] of `dtype` on mask's device.
torch::Tensor expand_to_tokens(std::span<const double> per_sample, const torch::Tensor& mask,
                               torch::ScalarType dtype = torch::kFloat32);

}  // namespace rlf::algo

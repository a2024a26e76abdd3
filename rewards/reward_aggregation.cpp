// Per-component shift/scale (identity for sum_then_normalize), then a weighted nansum.
#include "rewards/reward_aggregation.h"

#include <cmath>

#include "util/error.h"

namespace rlf {

const char* aggregation_name(RewardAggregation mode) {
  return mode == RewardAggregation::sum_then_normalize ? "sum_then_normalize" : "normalize_then_sum";
}

namespace {
constexpr RewardAggregation kAggregations[] = {RewardAggregation::sum_then_normalize,
                                               RewardAggregation::normalize_then_sum};
}  // namespace

std::vector<std::string> aggregation_names() {
  std::vector<std::string> out;
  for (auto mode : kAggregations) out.emplace_back(aggregation_name(mode));
  return out;
}

RewardAggregation parse_aggregation(const std::string& name) {
  for (auto mode : kAggregations) {
    if (name == aggregation_name(mode)) return mode;
  }
  fail("unknown reward aggregation '", name, "'; use \"sum_then_normalize\" or \"normalize_then_sum\"");
}

std::vector<std::optional<double>> aggregate_rewards(const ComponentMatrix& scores, const std::vector<double>& weights,
                                                     RewardAggregation mode, double std_eps) {
  const size_t n_samples = scores.size(), n_components = weights.size();
  for (size_t i = 0; i < n_samples; ++i) {
    check(scores[i].size() == n_components, "aggregate_rewards: sample ", i, " has ", scores[i].size(),
          " component scores, but there are ", n_components, " weights");
  }
  // Per component: the shift and scale applied before weighting.
  std::vector<double> mean(n_components, 0.0), scale(n_components, 1.0);
  if (mode == RewardAggregation::normalize_then_sum) {
    for (size_t c = 0; c < n_components; ++c) {
      double sum = 0.0;
      size_t n = 0;
      for (size_t i = 0; i < n_samples; ++i) {
        if (scores[i][c]) sum += *scores[i][c], ++n;
      }
      if (n == 0) continue;
      mean[c] = sum / double(n);
      double sq = 0.0;
      for (size_t i = 0; i < n_samples; ++i) {
        if (scores[i][c]) sq += (*scores[i][c] - mean[c]) * (*scores[i][c] - mean[c]);
      }
      double std = n >= 2 ? std::sqrt(sq / double(n - 1)) : 0.0;
      scale[c] = 1.0 / (std + std_eps);
    }
  }
  std::vector<std::optional<double>> totals(n_samples);
  for (size_t i = 0; i < n_samples; ++i) {
    double total = 0.0;
    bool any = false;
    for (size_t c = 0; c < n_components; ++c) {
      if (!scores[i][c]) continue;
      total += weights[c] * (*scores[i][c] - mean[c]) * scale[c];
      any = true;
    }
    if (any) totals[i] = total;
  }
  return totals;
}

}  // namespace rlf

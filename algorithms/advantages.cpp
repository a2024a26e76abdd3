// Advantage estimators for outcome rewards; see advantages.h and
// docs/algorithms.md for the formulas and conventions.
#include "algorithms/advantages.h"

#include <algorithm>
#include <cmath>
#include <unordered_map>

#include "algorithms/names.h"
#include "util/error.h"

namespace rlf::algo {
namespace {

constexpr detail::NameTable<AdvantageEstimator, 6> kEstimatorNames{{
    {AdvantageEstimator::Grpo, "grpo"},
    {AdvantageEstimator::DrGrpo, "dr_grpo"},
    {AdvantageEstimator::BatchStd, "batch_std"},
    {AdvantageEstimator::Rloo, "rloo"},
    {AdvantageEstimator::ReinforcePP, "reinforce_pp"},
    {AdvantageEstimator::ReinforcePPBaseline, "reinforce_pp_baseline"},
}};

// Mean and Bessel-corrected standard deviation of a set of values; std is 0
// for fewer than two values (no spread can be measured).
struct Moments {
  int64_t n = 0;
  double sum = 0.0;
  double mean = 0.0;
  double std = 0.0;
};

Moments moments_of(const std::vector<double>& values) {
  Moments m;
  m.n = static_cast<int64_t>(values.size());
  for (double v : values) m.sum += v;
  if (m.n == 0) return m;
  m.mean = m.sum / static_cast<double>(m.n);
  if (m.n < 2) return m;
  double sq = 0.0;
  for (double v : values) sq += (v - m.mean) * (v - m.mean);
  m.std = std::sqrt(sq / static_cast<double>(m.n - 1));
  return m;
}

void check_inputs(std::span<const std::optional<double>> rewards, std::span<const int64_t> group_ids,
                  const char* fn) {
  check(rewards.size() == group_ids.size(), fn, ": rewards has ", rewards.size(),
        " entries but group_ids has ", group_ids.size(), "; pass one group id per sample");
  for (std::size_t i = 0; i < rewards.size(); ++i) {
    if (rewards[i].has_value()) {
      check(std::isfinite(*rewards[i]), fn, ": rewards[", i, "] is ", *rewards[i],
            "; mark a missing reward with std::nullopt, never NaN or infinity");
    }
  }
}

// Present rewards of each group, keyed by group id.
std::unordered_map<int64_t, Moments> group_moments(std::span<const std::optional<double>> rewards,
                                                   std::span<const int64_t> group_ids) {
  std::unordered_map<int64_t, std::vector<double>> values;
  for (std::size_t i = 0; i < rewards.size(); ++i) {
    if (rewards[i].has_value()) values[group_ids[i]].push_back(*rewards[i]);
  }
  std::unordered_map<int64_t, Moments> out;
  for (const auto& [id, v] : values) out[id] = moments_of(v);
  return out;
}

// Whitens the present entries of `x` in place over the batch:
// (x - mean) / (std + eps), restricted to entries with include[i].
void whiten(std::vector<double>& x, const std::vector<bool>& include, double eps) {
  std::vector<double> values;
  for (std::size_t i = 0; i < x.size(); ++i) {
    if (include[i]) values.push_back(x[i]);
  }
  const Moments m = moments_of(values);
  for (std::size_t i = 0; i < x.size(); ++i) {
    x[i] = include[i] ? (x[i] - m.mean) / (m.std + eps) : 0.0;
  }
}

}  // namespace

AdvantageEstimator parse_advantage_estimator(std::string_view name) {
  return detail::parse_name(kEstimatorNames, "advantage estimator", name);
}

std::string_view advantage_estimator_name(AdvantageEstimator estimator) {
  return detail::name_of(kEstimatorNames, estimator);
}

void AdvantageOptions::validate() const {
  check(std::isfinite(std_eps) && std_eps >= 0.0, "AdvantageOptions: std_eps must be a finite value >= 0, got ",
        std_eps, " (TRL uses 1e-4)");
}

std::vector<double> compute_advantages(std::span<const std::optional<double>> rewards,
                                       std::span<const int64_t> group_ids, const AdvantageOptions& options) {
  options.validate();
  check_inputs(rewards, group_ids, "compute_advantages");
  const std::size_t n = rewards.size();
  const double eps = options.std_eps;
  const auto groups = group_moments(rewards, group_ids);

  std::vector<double> present;
  for (const auto& r : rewards) {
    if (r.has_value()) present.push_back(*r);
  }
  const Moments batch = moments_of(present);

  std::vector<double> adv(n, 0.0);
  std::vector<bool> has_baseline(n, false);  // present and in a group of >= 2 present rewards
  for (std::size_t i = 0; i < n; ++i) {
    if (!rewards[i].has_value()) continue;
    const double r = *rewards[i];
    const Moments& g = groups.at(group_ids[i]);
    has_baseline[i] = g.n >= 2;
    switch (options.estimator) {
      case AdvantageEstimator::Grpo:
        adv[i] = g.n >= 2 ? (r - g.mean) / (g.std + eps) : 0.0;
        break;
      case AdvantageEstimator::DrGrpo:
        adv[i] = g.n >= 2 ? r - g.mean : 0.0;
        break;
      case AdvantageEstimator::BatchStd:
        adv[i] = g.n >= 2 ? (r - g.mean) / (batch.std + eps) : 0.0;
        break;
      case AdvantageEstimator::Rloo:
        adv[i] = g.n >= 2 ? r - (g.sum - r) / static_cast<double>(g.n - 1) : 0.0;
        break;
      case AdvantageEstimator::ReinforcePP:
        adv[i] = (r - batch.mean) / (batch.std + eps);
        break;
      case AdvantageEstimator::ReinforcePPBaseline:
        adv[i] = g.n >= 2 ? r - g.mean : 0.0;
        break;
    }
  }
  if (options.estimator == AdvantageEstimator::ReinforcePPBaseline) whiten(adv, has_baseline, eps);
  return adv;
}

std::vector<int64_t> zero_variance_groups(std::span<const std::optional<double>> rewards,
                                          std::span<const int64_t> group_ids) {
  check_inputs(rewards, group_ids, "zero_variance_groups");
  struct Range {
    int64_t n_present = 0;
    double lo = 0.0, hi = 0.0;
  };
  std::unordered_map<int64_t, Range> ranges;
  std::vector<int64_t> order;  // group ids by first appearance
  for (std::size_t i = 0; i < rewards.size(); ++i) {
    auto [it, inserted] = ranges.try_emplace(group_ids[i]);
    if (inserted) order.push_back(group_ids[i]);
    if (!rewards[i].has_value()) continue;
    Range& range = it->second;
    const double r = *rewards[i];
    if (range.n_present == 0) {
      range.lo = range.hi = r;
    } else {
      range.lo = std::min(range.lo, r);
      range.hi = std::max(range.hi, r);
    }
    ++range.n_present;
  }
  std::vector<int64_t> out;
  for (int64_t id : order) {
    const Range& range = ranges.at(id);
    if (range.n_present < 2 || range.lo == range.hi) out.push_back(id);
  }
  return out;
}

torch::Tensor expand_to_tokens(std::span<const double> per_sample, const torch::Tensor& mask,
                               torch::ScalarType dtype) {
  check(mask.dim() == 2, "expand_to_tokens: mask must be [B, T], got ", mask.sizes());
  check(static_cast<int64_t>(per_sample.size()) == mask.size(0), "expand_to_tokens: ", per_sample.size(),
        " per-sample values for a mask of ", mask.size(0), " rows; pass one value per row");
  check(c10::isFloatingType(dtype), "expand_to_tokens: dtype must be a floating type, got ", dtype);
  const auto values = torch::tensor(std::vector<double>(per_sample.begin(), per_sample.end()),
                                    torch::TensorOptions().dtype(torch::kFloat64))
                          .to(mask.device(), dtype);  // [B]
  return torch::where(mask != 0, values.unsqueeze(1), torch::zeros({}, values.options()));  // [B, T]
}

}  // namespace rlf::algo

// Advantage estimators for outcome rewards; see advantages.h and
// docs/algorithms.md for the formulas and conventions.
#include "algorithms/advantages.h"

#include <algorithm>
#include <cmath>
#include <unordered_map>

#include "algorithms/names.h"
#include "util/double_fields.h"
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

// Mean and Bessel-corrected std of the values with include[i], over every
// rank (two passes through batch_sum, so the sums are the same as one
// process would form: each rank's partial sums in its own order, then added).
Moments batch_moments(const std::vector<double>& x, const std::vector<bool>& include, const BatchSum& batch_sum) {
  struct {
    double n = 0, sum = 0;
  } first;
  for (std::size_t i = 0; i < x.size(); ++i) {
    if (include[i]) first.n += 1.0, first.sum += x[i];
  }
  if (batch_sum) over_fields(first, batch_sum);
  Moments m;
  m.n = static_cast<int64_t>(first.n);
  m.sum = first.sum;
  if (m.n == 0) return m;
  m.mean = m.sum / static_cast<double>(m.n);
  double sq = 0.0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    if (include[i]) sq += (x[i] - m.mean) * (x[i] - m.mean);
  }
  if (batch_sum) batch_sum(std::span<double>(&sq, 1));
  if (m.n >= 2) m.std = std::sqrt(sq / static_cast<double>(m.n - 1));
  return m;
}

}  // namespace

AdvantageEstimator parse_advantage_estimator(std::string_view name) {
  return detail::parse_name(kEstimatorNames, "advantage estimator", name);
}

std::vector<std::string> advantage_estimator_names() { return detail::names_list(kEstimatorNames); }

std::string_view advantage_estimator_name(AdvantageEstimator estimator) {
  return detail::name_of(kEstimatorNames, estimator);
}

void AdvantageOptions::validate() const {
  check(std::isfinite(std_eps) && std_eps >= 0.0, "algorithm.std_eps must be a finite value >= 0, got ",
        std_eps, " (TRL uses 1e-4)");
}

std::vector<AdvantageBaseline> advantage_baselines(std::span<const std::optional<double>> rewards,
                                                   std::span<const int64_t> group_ids, const AdvantageOptions& options,
                                                   const BatchSum& batch_sum) {
  options.validate();
  check_inputs(rewards, group_ids, "compute_advantages");
  const std::size_t n = rewards.size();
  const double eps = options.std_eps;
  const auto groups = group_moments(rewards, group_ids);
  const AdvantageEstimator est = options.estimator;

  std::vector<double> r(n, 0.0);
  std::vector<bool> present(n, false);
  for (std::size_t i = 0; i < n; ++i) {
    if (rewards[i].has_value()) r[i] = *rewards[i], present[i] = true;
  }
  Moments batch;
  if (est == AdvantageEstimator::BatchStd || est == AdvantageEstimator::ReinforcePP) batch = batch_moments(r, present, batch_sum);

  std::vector<AdvantageBaseline> out(n);
  std::vector<bool> has_group(n, false);  // present and in a group of >= 2 present rewards
  for (std::size_t i = 0; i < n; ++i) {
    if (!present[i]) continue;
    const Moments& g = groups.at(group_ids[i]);
    has_group[i] = g.n >= 2;
    AdvantageBaseline& b = out[i];
    b.has_baseline = has_group[i];
    switch (est) {
      case AdvantageEstimator::Grpo:
        b.baseline = g.mean, b.scale = g.std + eps;
        break;
      case AdvantageEstimator::DrGrpo:
      case AdvantageEstimator::ReinforcePPBaseline:
        b.baseline = g.mean;
        break;
      case AdvantageEstimator::BatchStd:
        b.baseline = g.mean, b.scale = batch.std + eps;
        break;
      case AdvantageEstimator::Rloo:
        if (g.n >= 2) b.baseline = (g.sum - r[i]) / static_cast<double>(g.n - 1);
        break;
      case AdvantageEstimator::ReinforcePP:
        b.has_baseline = true, b.baseline = batch.mean, b.scale = batch.std + eps;
        break;
    }
  }
  if (est == AdvantageEstimator::ReinforcePPBaseline) {
    // x_i = r_i - group mean, whitened over the batch: baseline mean_g + mean_x, scale std_x + eps.
    std::vector<double> x(n, 0.0);
    for (std::size_t i = 0; i < n; ++i) {
      if (has_group[i]) x[i] = r[i] - out[i].baseline;
    }
    const Moments w = batch_moments(x, has_group, batch_sum);
    for (std::size_t i = 0; i < n; ++i) {
      if (has_group[i]) out[i].baseline += w.mean, out[i].scale = w.std + eps;
    }
  }
  return out;
}

std::vector<double> compute_advantages(std::span<const std::optional<double>> rewards,
                                       std::span<const int64_t> group_ids, const AdvantageOptions& options,
                                       const BatchSum& batch_sum) {
  const auto base = advantage_baselines(rewards, group_ids, options, batch_sum);
  std::vector<double> adv(rewards.size(), 0.0);
  for (std::size_t i = 0; i < adv.size(); ++i) {
    if (base[i].has_baseline) adv[i] = (*rewards[i] - base[i].baseline) / base[i].scale;
  }
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

#include "algorithms/reward_model_loss.h"

#include <torch/torch.h>

#include <algorithm>
#include <cmath>

#include "util/error.h"

namespace rlf::algo {

torch::Tensor bradley_terry_loss(const torch::Tensor& chosen, const torch::Tensor& rejected,
                                 const torch::Tensor& margin) {
  check(chosen.sizes() == rejected.sizes(), "bradley_terry_loss: chosen and rejected scores differ in shape");
  auto z = chosen - rejected;
  if (margin.defined()) {
    check(margin.sizes() == chosen.sizes(), "bradley_terry_loss: margin shape differs from the scores'");
    z = z - margin;
  }
  return torch::nn::functional::softplus(-z);
}

double pairwise_calibration_error(const std::vector<double>& margins, int64_t bins) {
  check(bins > 0, "calibration bins must be > 0 (got ", bins, ")");
  if (margins.empty()) return 0.0;
  std::vector<double> n(static_cast<size_t>(bins), 0.0), conf(n), hits(n);
  auto add = [&](double p, double outcome) {
    const auto b = static_cast<size_t>(std::clamp<int64_t>(static_cast<int64_t>(p * static_cast<double>(bins)), 0, bins - 1));
    n[b] += 1, conf[b] += p, hits[b] += outcome;
  };
  for (double m : margins) {
    const double p = 1.0 / (1.0 + std::exp(-m));
    add(p, 1.0);
    add(1.0 - p, 0.0);
  }
  const double total = 2.0 * static_cast<double>(margins.size());
  double ece = 0;
  for (size_t b = 0; b < n.size(); ++b)
    if (n[b] > 0) ece += (n[b] / total) * std::abs(hits[b] / n[b] - conf[b] / n[b]);
  return ece;
}

torch::Tensor rating_regression_loss(const torch::Tensor& scores, const torch::Tensor& ratings) {
  check(scores.dim() == 2 && scores.sizes() == ratings.sizes(), "rating_regression_loss: scores ", scores.sizes(),
        " and ratings ", ratings.sizes(), " must both be [N, K]");
  const auto rated = ratings.isfinite();
  const auto zero = torch::zeros({}, scores.options());
  // Unrated entries hold 0 inside the graph, so NaN cannot reach the gradient.
  const auto diff = torch::where(rated, scores - torch::where(rated, ratings.to(scores.dtype()), zero), zero);
  const auto n = rated.sum(1).to(scores.scalar_type());
  return diff.pow(2).sum(1) / n.clamp_min(1.0);
}

torch::Tensor gated_reward(const torch::Tensor& gate_logits, const torch::Tensor& scores, const torch::Tensor& scale,
                           double temperature) {
  check(gate_logits.sizes() == scores.sizes() && scores.dim() == 2, "gated_reward: gating logits ", gate_logits.sizes(),
        " and scores ", scores.sizes(), " must both be [N, K]");
  check(temperature > 0, "gated_reward: the temperature must be > 0 (got ", temperature, ")");
  return scale * (torch::softmax(gate_logits / temperature, 1) * scores).sum(1);
}

torch::Tensor process_reward_loss(const torch::Tensor& logits, const torch::Tensor& labels) {
  check(logits.sizes() == labels.sizes(), "process_reward_loss: logits ", logits.sizes(), " and labels ",
        labels.sizes(), " differ in shape");
  const auto y = labels.to(logits.dtype());
  return y * torch::nn::functional::softplus(-logits) + (1 - y) * torch::nn::functional::softplus(logits);
}

StepBounding parse_step_bounding(std::string_view name) {
  if (name == "none") return StepBounding::None;
  if (name == "clip") return StepBounding::Clip;
  if (name == "delta") return StepBounding::Delta;
  fail("step reward bounding must be \"none\", \"clip\" or \"delta\" (got \"", name, "\")");
}

std::string_view step_bounding_name(StepBounding bounding) {
  switch (bounding) {
    case StepBounding::None: return "none";
    case StepBounding::Clip: return "clip";
    case StepBounding::Delta: return "delta";
  }
  return "none";
}

std::vector<double> bound_step_rewards(const std::vector<double>& p, StepBounding bounding, double eta) {
  std::vector<double> r(p.size());
  for (size_t k = 0; k < p.size(); ++k) {
    switch (bounding) {
      case StepBounding::None: r[k] = p[k]; break;
      case StepBounding::Clip: r[k] = std::min(p[k] - eta, 0.0); break;
      case StepBounding::Delta: r[k] = k + 1 < p.size() ? p[k] - p[k + 1] : p[k]; break;
    }
  }
  return r;
}

double pearson_correlation(const std::vector<double>& x, const std::vector<double>& y) {
  check(x.size() == y.size(), "pearson_correlation: ", x.size(), " and ", y.size(), " values");
  const auto n = static_cast<double>(x.size());
  if (x.size() < 2) return 0.0;
  double mx = 0, my = 0;
  for (size_t i = 0; i < x.size(); ++i) mx += x[i], my += y[i];
  mx /= n, my /= n;
  double sxy = 0, sxx = 0, syy = 0;
  for (size_t i = 0; i < x.size(); ++i)
    sxy += (x[i] - mx) * (y[i] - my), sxx += (x[i] - mx) * (x[i] - mx), syy += (y[i] - my) * (y[i] - my);
  if (sxx <= 1e-300 || syy <= 1e-300) return 0.0;
  return sxy / std::sqrt(sxx * syy);
}

namespace {

// Ranks 1..n, ties given their mean rank.
std::vector<double> mean_ranks(const std::vector<double>& v) {
  std::vector<size_t> order(v.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return v[a] < v[b]; });
  std::vector<double> rank(v.size());
  for (size_t i = 0; i < order.size();) {
    size_t j = i;
    while (j + 1 < order.size() && v[order[j + 1]] == v[order[i]]) ++j;
    const double r = (static_cast<double>(i) + static_cast<double>(j)) / 2.0 + 1.0;
    for (size_t k = i; k <= j; ++k) rank[order[k]] = r;
    i = j + 1;
  }
  return rank;
}

}  // namespace

double spearman_correlation(const std::vector<double>& x, const std::vector<double>& y) {
  check(x.size() == y.size(), "spearman_correlation: ", x.size(), " and ", y.size(), " values");
  return pearson_correlation(mean_ranks(x), mean_ranks(y));
}

}  // namespace rlf::algo

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

}  // namespace rlf::algo

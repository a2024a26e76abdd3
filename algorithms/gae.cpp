// GAE and whitening; see gae.h and docs/algorithms.md section 13.
#include "algorithms/gae.h"

#include <cmath>

#include "util/double_fields.h"
#include "util/error.h"

namespace rlf::algo {

GaeResult gae(std::span<const double> rewards, std::span<const double> values, double gamma, double lambda) {
  check(rewards.size() == values.size(), "gae: ", rewards.size(), " rewards for ", values.size(), " values");
  check(std::isfinite(gamma) && gamma >= 0 && gamma <= 1, "gae: gamma must be in [0, 1] (got ", gamma, ")");
  check(std::isfinite(lambda) && lambda >= 0 && lambda <= 1, "gae: lambda must be in [0, 1] (got ", lambda, ")");
  const std::size_t n = rewards.size();
  GaeResult out;
  out.advantages.assign(n, 0.0);
  out.returns.assign(n, 0.0);
  double next_value = 0.0, acc = 0.0;
  for (std::size_t k = n; k-- > 0;) {
    check(std::isfinite(rewards[k]) && std::isfinite(values[k]), "gae: step ", k, " has a non-finite reward or value");
    const double delta = rewards[k] + gamma * next_value - values[k];
    acc = delta + gamma * lambda * acc;
    out.advantages[k] = acc;
    out.returns[k] = acc + values[k];
    next_value = values[k];
  }
  return out;
}

void whiten(std::vector<std::vector<float>>& values, const std::vector<std::vector<uint8_t>>& mask,
            const BatchSum& batch_sum) {
  check(values.size() == mask.size(), "whiten: ", values.size(), " rows of values for ", mask.size(), " of mask");
  struct {
    double n = 0, sum = 0;
  } first;
  for (std::size_t i = 0; i < values.size(); ++i) {
    check(values[i].size() == mask[i].size() || mask[i].empty(), "whiten: row ", i, " has ", values[i].size(),
          " values for ", mask[i].size(), " mask entries");
    for (std::size_t t = 0; t < mask[i].size(); ++t)
      if (mask[i][t]) first.n += 1, first.sum += values[i][t];
  }
  if (batch_sum) over_fields(first, batch_sum);
  if (first.n == 0) return;
  const double mean = first.sum / first.n;
  double sq = 0.0;
  for (std::size_t i = 0; i < values.size(); ++i)
    for (std::size_t t = 0; t < mask[i].size(); ++t)
      if (mask[i][t]) sq += (values[i][t] - mean) * (values[i][t] - mean);
  if (batch_sum) batch_sum(std::span<double>(&sq, 1));
  const double scale = first.n >= 2 ? 1.0 / std::sqrt(sq / (first.n - 1) + 1e-8) : 1.0;
  for (std::size_t i = 0; i < values.size(); ++i)
    for (std::size_t t = 0; t < mask[i].size(); ++t)
      if (mask[i][t]) values[i][t] = static_cast<float>((values[i][t] - mean) * scale);
}

}  // namespace rlf::algo

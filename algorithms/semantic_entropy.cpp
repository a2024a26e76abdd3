// Discrete semantic entropy and SEED-GRPO's advantage scale; see semantic_entropy.h.
#include "algorithms/semantic_entropy.h"

#include <cmath>
#include <map>

#include "util/error.h"

namespace rlf::algo {

double semantic_entropy(std::span<const int> clusters) {
  if (clusters.empty()) return 0.0;
  std::map<int, double> count;
  double singletons = 0;
  for (int c : clusters) {
    check(c >= 0 || c == kNoCluster, "semantic_entropy: cluster id ", c, " is neither >= 0 nor kNoCluster");
    if (c == kNoCluster) ++singletons;
    else count[c] += 1;
  }
  const double n = static_cast<double>(clusters.size());
  double se = singletons * (-(1.0 / n) * std::log(1.0 / n));
  for (const auto& [c, k] : count) se -= (k / n) * std::log(k / n);
  return se;
}

double seed_scale(double entropy, std::size_t n, double alpha) {
  check(std::isfinite(alpha) && alpha >= 0 && alpha <= 1, "algorithm.seed_alpha must be in [0, 1], got ", alpha);
  if (n < 2) return 1.0;
  return 1.0 - alpha * entropy / std::log(static_cast<double>(n));
}

}  // namespace rlf::algo

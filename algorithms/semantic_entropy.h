// SEED-GRPO (Chen et al. 2025, "SEED-GRPO: Semantic Entropy Enhanced GRPO
// for Uncertainty-Aware Policy Optimization"): a group's advantages are
// scaled down by the group's semantic uncertainty, the entropy over clusters
// of equivalent answers among its G samples. rlf uses the discrete estimator
// (Farquhar et al. 2024): with n_c samples in cluster c,
//   SE = -sum_c (n_c / G) log(n_c / G),    0 <= SE <= log G,
// and SEED-GRPO's linear scale
//   A_i <- A_i * (1 - alpha * SE / log G),
// so a group whose samples all agree keeps its advantages and one whose
// samples all differ keeps (1 - alpha) of them. Samples without an answer
// are clusters of their own (each disagrees with everything). Pure
// functions; the caller clusters (rewards/math/majority_vote.h, the math
// verifier's equivalence).
#pragma once

#include <cstddef>
#include <span>

namespace rlf::algo {

inline constexpr int kNoCluster = -1;  // a sample without an answer: a cluster of its own

// SE of one group from its samples' cluster ids (any ints >= 0, or kNoCluster).
double semantic_entropy(std::span<const int> clusters);

// The factor 1 - alpha * SE / log(n); 1 when n < 2. alpha in [0, 1].
double seed_scale(double entropy, std::size_t n, double alpha);

}  // namespace rlf::algo

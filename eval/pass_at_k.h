// pass@k: the probability that at least one of k samples is correct,
// estimated without bias from n >= k samples of which c are correct
// (Chen et al. 2021, "Evaluating Large Language Models Trained on Code", eq. 1):
//
//   pass@k = 1 - C(n - c, k) / C(n, k)
//          = 1 - prod_{i = n-c+1}^{n} (1 - k / i)     (the stable product form)
//
// and 1 exactly when n - c < k (every k-subset holds a correct sample).
// The dataset value is the mean over prompts.
#pragma once

#include <cstdint>
#include <vector>

namespace rlf {

// The unbiased pass@k of one prompt with `n_correct` of `n` correct.
// Throws rlf::Error unless 0 <= n_correct <= n and 1 <= k <= n.
double pass_at_k(int64_t n, int64_t n_correct, int64_t k);

// The k values reported for n samples: 1, the powers of two below n, and n
// (ascending, distinct): n = 10 -> {1, 2, 4, 8, 10}; n = 1 -> {1}.
std::vector<int64_t> reported_k_values(int64_t n);

}  // namespace rlf

// The unbiased pass@k estimator in product form (no large binomials).
#include "eval/pass_at_k.h"

#include "util/error.h"

namespace rlf {

double pass_at_k(int64_t n, int64_t n_correct, int64_t k) {
  check(n >= 1, "pass_at_k: n = ", n, ": need at least one sample");
  check(n_correct >= 0 && n_correct <= n, "pass_at_k: n_correct = ", n_correct, " must be in [0, n = ", n, "]");
  check(k >= 1 && k <= n, "pass_at_k: k = ", k, " must be in [1, n = ", n, "]");
  if (n - n_correct < k) return 1.0;
  // C(n-c, k) / C(n, k) = prod_{i=n-c+1}^{n} (1 - k/i)
  double all_wrong = 1.0;
  for (int64_t i = n - n_correct + 1; i <= n; ++i) all_wrong *= 1.0 - double(k) / double(i);
  return 1.0 - all_wrong;
}

std::vector<int64_t> reported_k_values(int64_t n) {
  check(n >= 1, "reported_k_values: n = ", n, ": need at least one sample");
  std::vector<int64_t> ks;
  for (int64_t k = 1; k < n; k *= 2) ks.push_back(k);
  ks.push_back(n);
  return ks;
}

}  // namespace rlf

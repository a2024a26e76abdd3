#include "model/flops.h"

#include "model/cpu_bf16_linear.h"

#include <algorithm>
#include <chrono>

namespace rlf {

double forward_flops(const ModelConfig& c, double tokens, double mean_len, double classifier_rows) {
  const double d = static_cast<double>(c.hidden_size), hd = static_cast<double>(c.resolved_head_dim());
  const double q = c.num_attention_heads * hd, kv = c.num_key_value_heads * hd;
  const double i = static_cast<double>(c.intermediate_size);
  const double per_layer = d * q + 2 * d * kv + q * d + 3 * d * i;  // weights of the projections
  const double rows = classifier_rows < 0 ? static_cast<double>(c.vocab_size) : classifier_rows;
  const double weights = c.num_hidden_layers * per_layer + rows * d;
  const double attention = c.num_hidden_layers * 2.0 * 2.0 * q * (mean_len / 2.0);
  return tokens * (2.0 * weights + attention);
}

double training_flops(const ModelConfig& c, double tokens, double mean_len, bool full, double classifier_rows) {
  return forward_flops(c, tokens, mean_len, classifier_rows) * (full ? 3.0 : 2.0);
}

double measure_matmul_peak(torch::ScalarType dtype, int64_t n, int repeats) {
  torch::NoGradGuard ng;
  auto a = torch::randn({n, n}).to(dtype), b = torch::randn({n, n}).to(dtype);
  (void)linear_layer(a, b);  // warm-up: threads, packing buffers
  double best = 0;
  for (int r = 0; r < repeats; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    (void)linear_layer(a, b);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (s > 0) best = std::max(best, 2.0 * n * n * n / s);
  }
  return best;
}

}  // namespace rlf

#include "model/finite_weights.h"

#include "util/error.h"

namespace rlf {

std::optional<NonFiniteTensor> find_non_finite(CausalLMImpl& model) {
  torch::NoGradGuard ng;
  for (const auto& p : model.named_parameters()) {
    const torch::Tensor& t = p.value();
    if (!t.is_floating_point() || t.isfinite().all().item<bool>()) continue;
    NonFiniteTensor out;
    out.name = p.key();
    out.n_nan = t.isnan().sum().item<int64_t>();
    out.n_inf = t.isinf().sum().item<int64_t>();
    out.numel = t.numel();
    return out;
  }
  return std::nullopt;
}

void check_finite_weights(CausalLMImpl& model, const std::string& what) {
  const std::optional<NonFiniteTensor> bad = find_non_finite(model);
  if (!bad) return;
  std::string count;
  if (bad->n_nan > 0) count = str(bad->n_nan, " NaN value", bad->n_nan == 1 ? "" : "s");
  if (bad->n_inf > 0) count += str(count.empty() ? "" : " and ", bad->n_inf, " infinite value", bad->n_inf == 1 ? "" : "s");
  fail("tensor '", bad->name, "' holds ", count, " (of ", bad->numel, "): ", what,
       " would not compute anything meaningful, so it is not written");
}

}  // namespace rlf

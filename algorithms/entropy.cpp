// Chunked entropy from logits with a memory-light custom backward; see entropy.h.
#include "algorithms/entropy.h"

#include <algorithm>
#include <cmath>

#include <torch/autograd.h>

#include "util/error.h"

namespace rlf::algo {
namespace {

// Working dtype: at least float32.
torch::ScalarType compute_dtype(torch::ScalarType t) {
  return t == torch::kFloat64 ? torch::kFloat64 : torch::kFloat32;
}

// p log p with 0 log 0 = 0 (logits of -inf give p = 0, log p = -inf).
torch::Tensor p_log_p(const torch::Tensor& p, const torch::Tensor& logp) {
  return torch::where(p > 0, p * logp, torch::zeros({}, p.options()));
}

class EntropyFunction : public torch::autograd::Function<EntropyFunction> {
 public:
  // logits2d [N, V] -> [N]
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& logits2d,
                               int64_t chunk) {
    ctx->save_for_backward({logits2d});
    ctx->saved_data["chunk"] = chunk;
    const int64_t n = logits2d.size(0);
    const auto dtype = compute_dtype(logits2d.scalar_type());
    auto out = torch::empty({n}, logits2d.options().dtype(dtype));  // [N]
    for (int64_t start = 0; start < n; start += chunk) {
      const int64_t len = std::min(chunk, n - start);
      const auto z = logits2d.narrow(0, start, len).to(dtype);  // [len, V]
      const auto logp = torch::log_softmax(z, -1);
      out.narrow(0, start, len).copy_(-p_log_p(logp.exp(), logp).sum(-1));
    }
    return out;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grad_outputs) {
    const auto logits2d = ctx->get_saved_variables()[0];
    const int64_t chunk = ctx->saved_data["chunk"].toInt();
    const auto grad_h = grad_outputs[0];  // [N]
    const int64_t n = logits2d.size(0);
    const auto dtype = compute_dtype(logits2d.scalar_type());
    auto grad = torch::empty_like(logits2d);  // [N, V]
    for (int64_t start = 0; start < n; start += chunk) {
      const int64_t len = std::min(chunk, n - start);
      const auto z = logits2d.narrow(0, start, len).to(dtype);  // [len, V]
      const auto logp = torch::log_softmax(z, -1);
      const auto p = logp.exp();
      const auto h = -p_log_p(p, logp).sum(-1, /*keepdim=*/true);  // [len, 1]
      // dH/dz = -p (log p + H); p = 0 entries get 0.
      const auto g = -(p_log_p(p, logp) + p * h) * grad_h.narrow(0, start, len).to(dtype).unsqueeze(1);
      grad.narrow(0, start, len).copy_(g);
    }
    return {grad, torch::Tensor()};
  }
};

}  // namespace

torch::Tensor entropy_from_logits(const torch::Tensor& logits, int64_t chunk_positions) {
  check(logits.defined() && logits.dim() == 3, "entropy_from_logits: logits must be [B, T, V], got ",
        logits.defined() ? logits.sizes() : c10::IntArrayRef{});
  check(c10::isFloatingType(logits.scalar_type()), "entropy_from_logits: logits must be a floating tensor, got ",
        logits.scalar_type());
  check(chunk_positions >= 0, "entropy_from_logits: chunk_positions must be >= 0 (0 = all at once), got ",
        chunk_positions);
  const int64_t b = logits.size(0), t = logits.size(1), v = logits.size(2);
  check(v > 0, "entropy_from_logits: the vocabulary dimension V is empty");
  const int64_t n = b * t;
  const int64_t chunk = chunk_positions == 0 ? std::max<int64_t>(n, 1) : chunk_positions;
  const auto logits2d = logits.reshape({n, v});  // [B*T, V]; a view when contiguous
  return EntropyFunction::apply(logits2d, chunk).view({b, t});
}

torch::Tensor self_certainty(const torch::Tensor& logits, const torch::Tensor& mask) {
  TORCH_CHECK(logits.dim() == 3 && mask.dim() == 2 && logits.size(0) == mask.size(0) && logits.size(1) == mask.size(1),
              "self_certainty: logits [B, T, V] and mask [B, T] expected");
  torch::NoGradGuard ng;
  const double V = static_cast<double>(logits.size(2));
  // Per position: -log V - mean_v log p(v), computed in float64.
  const auto logp = torch::log_softmax(logits.to(torch::kFloat64), 2);
  const auto kl = -logp.mean(2) - std::log(V);                      // [B, T]
  const auto m = (mask != 0).to(torch::kFloat64);
  return (kl * m).sum(1) / m.sum(1);                                 // NaN where a row has no position
}

}  // namespace rlf::algo

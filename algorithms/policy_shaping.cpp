// Shaped off-policy loss; see policy_shaping.h and docs/feedback.md.
#include "algorithms/policy_shaping.h"

#include <cmath>

#include <torch/torch.h>

#include "util/error.h"

namespace rlf::algo {

torch::Tensor shaped_policy_loss(const torch::Tensor& logp, const torch::Tensor& advantages, const torch::Tensor& mask,
                                 double gamma, const char* gamma_key) {
  check(std::isfinite(gamma) && gamma > 0, gamma_key, " must be > 0 (got ", gamma, "; Critique-GRPO uses 0.1)");
  check(logp.dim() == 2 && mask.sizes() == logp.sizes(), "shaped_policy_loss: logp and mask must be [B, T] alike");
  auto adv = advantages.dim() == 1 ? advantages.unsqueeze(1).expand_as(logp) : advantages;
  check(adv.sizes() == logp.sizes(), "shaped_policy_loss: advantages must be [B] or [B, T]");
  const auto on = mask != 0;
  const auto zero = torch::zeros({}, logp.options());
  // Masked positions see logp = 0 (p = 1) inside the graph, so inf/NaN there
  // cannot leak into the gradient through where()'s other branch.
  const auto safe_logp = torch::where(on, logp, zero);
  const auto p = torch::exp(safe_logp.clamp_max(0.0));
  const auto f = p / (p + gamma);
  const auto safe_adv = torch::where(on, adv.to(logp.dtype()), zero);
  return torch::where(on, -safe_adv * f, zero);
}

torch::Tensor likelihood_policy_loss(const torch::Tensor& logp, const torch::Tensor& advantages,
                                     const torch::Tensor& mask) {
  check(logp.dim() == 2 && mask.sizes() == logp.sizes(), "likelihood_policy_loss: logp and mask must be [B, T] alike");
  auto adv = advantages.dim() == 1 ? advantages.unsqueeze(1).expand_as(logp) : advantages;
  check(adv.sizes() == logp.sizes(), "likelihood_policy_loss: advantages must be [B] or [B, T]");
  const auto on = mask != 0;
  const auto zero = torch::zeros({}, logp.options());
  const auto safe_logp = torch::where(on, logp, zero);  // -inf at a masked position cannot reach the gradient
  const auto safe_adv = torch::where(on, adv.to(logp.dtype()), zero);
  return torch::where(on, -safe_adv * safe_logp, zero);
}

torch::Tensor off_policy_loss(const torch::Tensor& logp, const torch::Tensor& advantages, const torch::Tensor& mask,
                              const OffPolicyLossOptions& options) {
  if (options.objective == OffPolicyObjective::Likelihood) return likelihood_policy_loss(logp, advantages, mask);
  return shaped_policy_loss(logp, advantages, mask, options.gamma);
}

}  // namespace rlf::algo

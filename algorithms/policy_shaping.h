// Policy shaping for off-policy tokens (LUFFY, Yan et al. 2025; used by
// Critique-GRPO, Zhang et al. 2025, for refinements): tokens that another
// context produced (a refinement written with a critique in view) are
// trained without an importance ratio and without clipping, with the
// policy's probability p = exp(logp) passed through
//
//   f(p) = p / (p + gamma),       per-token loss = -A_t * f(p_t)
//
// so d loss / d logp = -A_t * gamma * p / (p + gamma)^2: low-probability
// tokens (the ones the policy would not have written) still get a gradient
// (f' = 1/gamma at p -> 0, where plain -A*p would vanish), while tokens the
// policy already writes saturate. gamma = 0.1 in both papers.
//
// The plain alternative (refine.objective = "likelihood"; ILF, Scheurer et
// al. 2023, trains refinements by maximum likelihood): per-token loss
// -A_t * log p_t, so d loss / d logp = -A_t at every probability. A token the
// policy would almost never write (p = 1e-4) gets a gradient A_t there,
// against about A_t * p / gamma = A_t * 1e-3 from the shaped objective.
//
// Letters and masks as in policy_loss.h: [B, T]; tokens with mask == 0 get
// loss 0 and exactly zero gradient whatever logp and advantages hold there.
#pragma once

#include <torch/types.h>

namespace rlf::algo {

// Per-token shaped loss [B, T] (dtype of logp, differentiable w.r.t. logp).
// Throws rlf::Error for gamma <= 0 (naming `gamma_key`) or mismatched shapes.
torch::Tensor shaped_policy_loss(const torch::Tensor& logp, const torch::Tensor& advantages,
                                 const torch::Tensor& mask, double gamma,
                                 const char* gamma_key = "refine.gamma");

// Per-token -A * logp [B, T] (0 and zero gradient where mask == 0).
torch::Tensor likelihood_policy_loss(const torch::Tensor& logp, const torch::Tensor& advantages,
                                     const torch::Tensor& mask);

// The objective of off-policy refinement tokens (refine.objective).
enum class OffPolicyObjective { Shaped, Likelihood };

struct OffPolicyLossOptions {
  OffPolicyObjective objective = OffPolicyObjective::Shaped;  // refine.objective
  double gamma = 0.1;                                         // refine.gamma (Shaped only)
};

// The loss of `options.objective`.
torch::Tensor off_policy_loss(const torch::Tensor& logp, const torch::Tensor& advantages, const torch::Tensor& mask,
                              const OffPolicyLossOptions& options);

}  // namespace rlf::algo

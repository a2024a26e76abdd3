// Per-token estimators of KL(pi_theta || pi_ref) to a frozen reference
// policy, from the log-probabilities of the sampled tokens only (Schulman,
// "Approximating KL divergence", 2020). With d = ref_logp - logp
// (= log pi_ref/pi_theta of a token sampled from pi_theta):
//   k1 = -d                    unbiased, high variance, can be negative
//   k2 = d^2 / 2               biased, low variance, >= 0
//   k3 = exp(d) - d - 1        unbiased, low variance, >= 0 (GRPO's KL term)
//
// Two uses (docs/algorithms.md):
//   in the loss:    per_token_loss += beta * kl_estimate(...)  (gradient flows to logp)
//   in the reward:  reward += kl_reward_penalty(...)           (= -beta * k, detached);
//                   sum it over t to fold it into a per-sample outcome reward.
// logp, ref_logp, mask: [B, T]; tokens with mask == 0 get 0 and zero gradient.
#pragma once

#include <string_view>
#include <string>
#include <vector>

#include <torch/types.h>

namespace rlf::algo {

enum class KlEstimator { K1, K2, K3 };

KlEstimator parse_kl_estimator(std::string_view name);  // "k1", "k2", "k3"
std::string_view kl_estimator_name(KlEstimator estimator);
std::vector<std::string> kl_estimator_names();  // every name, in the order docs list them

// [B, T] per-token estimate, differentiable w.r.t. logp (ref_logp is
// detached); dtype of logp.
torch::Tensor kl_estimate(const torch::Tensor& logp, const torch::Tensor& ref_logp, const torch::Tensor& mask,
                          KlEstimator estimator);

// [B, T] per-token reward shaping -beta * k, detached (no gradient).
// beta must be >= 0.
torch::Tensor kl_reward_penalty(const torch::Tensor& logp, const torch::Tensor& ref_logp,
                                const torch::Tensor& mask, KlEstimator estimator, double beta);

}  // namespace rlf::algo

// Negative-aware fine-tuning (NFT; Chen et al. 2025, "Bridging Supervised
// Learning and Reinforcement Learning in Math Reasoning"): supervised
// learning on the correct answers, plus an implicit negative policy for the
// incorrect ones, as a per-token loss. With r_t = pi_theta / pi_old (token
// ratio) and r_q a question's correct rate in its group, clamped to
// [0.02, 0.98]:
//   correct sample:    l_t = (1 - r_q) * -log r_t
//   incorrect sample:  l_t = (1 - r_q) * neg_weight * -log max_sg((1 - r_q r_t) / (1 - r_q), eps)
// where max_sg(x, eps) has the value max(x, eps) and the gradient of x (the
// reference code's clamp_preserve_grad): the implicit negative policy
// (pi_old - r_q pi_theta)/(1 - r_q) cannot reach 0 in value, and the
// gradient stays bounded by 1/eps. At r_t = 1 the gradient is
// -(1 - r_q) grad log pi on correct samples and +r_q grad log pi on incorrect
// ones: Dr.GRPO's advantages r - r_q (the paper's on-policy equivalence).
// Questions answered all right or all wrong carry no loss (the reference
// trains with DAPO's dynamic sampling, which drops them).
// Pure function; docs/algorithms.md has the derivation.
#pragma once

#include <torch/types.h>

namespace rlf::algo {

struct NftOptions {
  double neg_weight = 1.0;  // weight of the incorrect samples' loss (0 = rejection-sampling fine-tuning)
  double clamp_negative = 1.0;  // eps of max_sg on the negative proxy (the reference's 1.0), > 0

  // Throws rlf::Error naming the key (algorithm.nft_neg_weight, ...).
  void validate() const;
};

struct NftStats {
  double n_tokens = 0;        // loss tokens of rows with a usable rate
  double clamped_frac = 0;    // share of incorrect samples' tokens whose proxy was below eps
  double ratio_mean = 0;      // mean token ratio
};

struct NftResult {
  torch::Tensor per_token;  // [B, T], differentiable w.r.t. logp; 0 where mask == 0 or the row's rate is unusable
  NftStats stats;
};

// logp, old_logp, mask: [B, T]; correct: [B] (1 correct, 0 incorrect);
// rate: [B] the row's question correct rate (NaN or outside (0, 1): no loss).
NftResult nft_loss(const torch::Tensor& logp, const torch::Tensor& old_logp, const torch::Tensor& correct,
                   const torch::Tensor& rate, const torch::Tensor& mask, const NftOptions& options = {});

// 1 where the row's rate lies strictly inside (0, 1), else 0: [B] float.
torch::Tensor nft_rows(const torch::Tensor& rate);

}  // namespace rlf::algo

// Rollout/trainer mismatch correction: when the trainer recomputes the old
// log-probs (algorithm.recompute_old_logprobs), each rollout token has two
// numbers for the same weights, the rollout engine's (behaviour, mu) and the
// trainer's (old, pi_old); they differ when the rollout ran at another
// precision, with other kernels or another policy version. The policy loss
// is then taken against pi_old and corrected towards the data's true
// distribution with
//   truncated importance sampling (TIS, Yao et al. 2025, "Your Efficient RL
//     Framework Secretly Brings You Off-Policy RL Training"): each token's
//     loss is multiplied by w_t = min(pi_old / mu, tis_cap), detached;
//   sequence masking (masked IS, as verl's rollout correction "seq mask"):
//     a sequence whose geometric-mean ratio exp(mean_t log(pi_old / mu))
//     lies outside [mask_low, mask_high] carries no loss (its tokens still
//     count in the normaliser).
// Pure function; formulas in docs/algorithms.md.
#pragma once

#include <torch/types.h>

namespace rlf::algo {

struct RolloutCorrectionOptions {
  double tis_cap = 0.0;    // C > 0: w_t = min(pi_old/mu, C) multiplies each token's loss (2 as verl's default); 0 = off
  double mask_low = 0.0;   // sequences with geometric-mean ratio < mask_low are masked (e.g. 0.5); 0 = off
  double mask_high = 0.0;  // sequences with geometric-mean ratio > mask_high are masked (e.g. 2); 0 = off

  bool active() const { return tis_cap > 0 || mask_low > 0 || mask_high > 0; }
  // Throws rlf::Error naming the key (algorithm.tis_cap, ...).
  void validate() const;
};

struct RolloutCorrectionStats {
  double n_tokens = 0;         // loss tokens
  double n_sequences = 0;      // rows with at least one loss token
  double weight_mean = 0;      // mean of w over loss tokens (masked sequences count as 0)
  double capped_frac = 0;      // share of loss tokens whose ratio exceeded tis_cap
  double masked_seq_frac = 0;  // share of sequences masked
  double kl = 0;               // mean over loss tokens of the k3 estimate of KL(mu || pi_old): (r - 1) - log r,
                               // r = pi_old / mu; 0 when the two agree
};

struct RolloutCorrection {
  torch::Tensor weight;  // [B, T] fp32, no gradient: the factor of each token's loss (0 off the mask)
  RolloutCorrectionStats stats;
};

// old_logp: the trainer's log-probs; behaviour_logp: the rollout's; mask:
// nonzero on loss tokens. All [B, T]. Tokens with mask == 0 get weight 0
// whatever they hold (inf, NaN).
RolloutCorrection rollout_correction(const torch::Tensor& old_logp, const torch::Tensor& behaviour_logp,
                                     const torch::Tensor& mask, const RolloutCorrectionOptions& options);

}  // namespace rlf::algo

// Clipped policy-gradient surrogate (PPO / GRPO / DAPO / dual-clip / GSPO) as
// a per-token loss. Pure function: the trainer turns the per-token loss into
// a scalar with aggregate_loss() (loss_aggregation.h), after adding any
// per-token terms of its own (KL penalty, entropy bonus).
//
// Letters: B = sequences in the micro-batch, T = completion positions.
// Inputs (all [B, T], same device, floating dtype except the mask):
//   logp       log pi_theta(y_t | ...) of the sampled tokens, requires grad
//   old_logp   log pi_old of the same tokens (the rollout policy), no grad
//   advantages [B, T] or [B] (broadcast over T), no grad
//   mask       nonzero on tokens the policy wrote (loss tokens). Tokens with
//              mask == 0 get loss 0 and exactly zero gradient, whatever
//              logp/old_logp/advantages hold there (even inf or NaN).
// Formulas and papers: docs/algorithms.md.
#pragma once

#include <string_view>

#include <torch/types.h>

namespace rlf::algo {

// Where the importance ratio pi_theta / pi_old is taken.
enum class RatioLevel {
  Token,     // "token":    r_t = exp(logp_t - old_logp_t)                  (PPO, GRPO, DAPO)
  Sequence,  // "sequence": s_i = exp(mean_t(logp - old_logp)) per sequence (GSPO, Zheng et al. 2025)
};

RatioLevel parse_ratio_level(std::string_view name);  // "token", "sequence"
std::string_view ratio_level_name(RatioLevel level);

struct PolicyLossOptions {
  // Lower clip: the ratio is clipped at 1 - eps_low. In [0, 1).
  double eps_low = 0.2;
  // Upper clip: the ratio is clipped at 1 + eps_high. >= 0. DAPO's
  // clip-higher uses 0.28; GSPO's sequence ratios use ~4e-4 (low 3e-4).
  double eps_high = 0.2;
  // Dual-clip bound c (Ye et al. 2020): for A < 0 the loss is capped at
  // c * |A|. 0 turns it off; otherwise it must be > 1 (verl uses 3).
  double dual_clip = 0.0;
  // Token-level (PPO/GRPO) or sequence-level (GSPO) importance ratio.
  RatioLevel ratio_level = RatioLevel::Token;
  // Safeguards for off-policy tokens (the `guard` argument of policy_loss:
  // replayed tokens, tokens sampled under another context), whose old_logp
  // is a stored behaviour log-prob:
  //   ratio_cap  C > 0: the ratio is truncated, r -> min(r, C), before the
  //              surrogate (no gradient where it is capped); 0 = off.
  //   mask_low, mask_high: a token whose ratio lies outside [mask_low,
  //              mask_high] contributes nothing (loss 0, no gradient; it
  //              still counts in the normaliser). 0 = that side off.
  double ratio_cap = 0.0;
  double mask_low = 0.0;
  double mask_high = 0.0;

  // Throws rlf::Error naming the bad field.
  void validate() const;
};

// Diagnostics over the loss tokens (mask != 0) of this call; all 0 when
// there are none. Sequence level: each token carries its sequence's ratio.
struct PolicyLossStats {
  double n_tokens = 0;        // number of loss tokens
  double clip_frac_low = 0;   // share with A < 0 and ratio < 1 - eps_low (gradient cut)
  double clip_frac_high = 0;  // share with A > 0 and ratio > 1 + eps_high (gradient cut)
  double clip_frac_dual = 0;  // share with A < 0 and ratio > dual_clip (capped; 0 when off)
  double ratio_mean = 0;      // mean importance ratio
  double ratio_max = 0;       // largest importance ratio
  double approx_kl = 0;       // mean of (r - 1) - log r with r = pi_theta/pi_old per token:
                              // the k3 estimate of KL(pi_old || pi_theta), always >= 0
  double capped_frac = 0;     // share of loss tokens whose ratio was truncated (guarded tokens)
  double masked_frac = 0;     // share of loss tokens masked for leaving the band (guarded tokens)
};

struct PolicyLossResult {
  torch::Tensor per_token;  // [B, T] loss = -(clipped surrogate); 0 where mask == 0;
                            // differentiable w.r.t. logp; dtype of logp
  PolicyLossStats stats;
};

// Per-token clipped surrogate loss; throws rlf::Error on shape/dtype mismatch.
// `guard` [B, T] (optional): nonzero on the tokens the off-policy safeguards
// (ratio_cap, mask_low/high) apply to; undefined = none.
PolicyLossResult policy_loss(const torch::Tensor& logp, const torch::Tensor& old_logp,
                             const torch::Tensor& advantages, const torch::Tensor& mask,
                             const PolicyLossOptions& options = {}, const torch::Tensor& guard = {});

}  // namespace rlf::algo

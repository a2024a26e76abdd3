// Policy-gradient objectives as a per-token loss: the clipped surrogate (PPO /
// GRPO / DAPO / dual-clip / GSPO), CISPO, DPPO's divergence trust region
// (binary TV / binary KL) and the covariance-based Clip-Cov / KL-Cov. Pure function: the trainer turns the per-token loss into
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
#include <string>
#include <vector>

#include <torch/types.h>

namespace rlf::algo {

// Where the importance ratio pi_theta / pi_old is taken.
enum class RatioLevel {
  Token,     // "token":    r_t = exp(logp_t - old_logp_t)                  (PPO, GRPO, DAPO)
  Sequence,  // "sequence": s_i = exp(mean_t(logp - old_logp)) per sequence (GSPO, Zheng et al. 2025)
};

RatioLevel parse_ratio_level(std::string_view name);  // "token", "sequence"
std::string_view ratio_level_name(RatioLevel level);
std::vector<std::string> ratio_level_names();  // every name, in the order docs list them

// Which objective turns ratios and advantages into a per-token loss (r the
// importance ratio, sg = stop-gradient; exact formulas in docs/algorithms.md).
enum class PolicyObjective {
  Clip,     // "clip":     -min(r A, clip(r, 1-eps_low, 1+eps_high) A) (+ dual clip)       [Schulman 2017]
  Cispo,    // "cispo":    -sg(clip(r, 1-eps_low, 1+eps_high)) A log pi: every token keeps a gradient
            //             [MiniMax-M1, 2025]
  DppoTv,   // "dppo_tv":  -sg(min(r, dppo_ratio_cap)) A log pi on tokens inside the trust region
            //             p - p_old <= eps_high (A > 0), >= -eps_low (A <= 0); masked outside
            //             [Rethinking the Trust Region in LLM RL, 2026]
  DppoKl,   // "dppo_kl":  as dppo_tv with the binary KL(p_old || p) <= eps_high / eps_low as the region
  ClipCov,  // "clip_cov": the clipped surrogate, with a share of the tokens whose
            //             (A - mean A)(log pi - mean log pi) lies in (clip_cov_low, clip_cov_high)
            //             detached [Cui et al. 2025, The Entropy Mechanism of RL for Reasoning LMs]
  KlCov,    // "kl_cov":   -r A, plus kl_cov_coef |log pi - log pi_old| on the share of tokens with the
            //             largest covariance [Cui et al. 2025]
};

// "clip", "cispo", "dppo_tv", "dppo_kl", "clip_cov", "kl_cov".
PolicyObjective parse_policy_objective(std::string_view name);
std::string_view policy_objective_name(PolicyObjective objective);
std::vector<std::string> policy_objective_names();  // every objective's name, in the order docs list them

struct PolicyLossOptions {
  // The objective (see the enum); the clip bounds below are its parameters:
  // the ratio clip (clip, clip_cov), the clip of the detached IS weight
  // (cispo; MiniMax-M1 leaves the low side open, ScaleRL uses eps_high 4),
  // the trust-region bounds delta on p - p_old (dppo_tv) or the binary KL (dppo_kl).
  PolicyObjective objective = PolicyObjective::Clip;
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
  // dppo_tv, dppo_kl: the detached IS weight is truncated at this value (> 0).
  double dppo_ratio_cap = 20.0;
  // clip_cov: share of the loss tokens detached (at least one when any is
  // eligible), chosen among the tokens with covariance in (clip_cov_low,
  // clip_cov_high) not already clipped; the paper's 2e-4, 1, 5.
  double clip_cov_fraction = 2e-4;
  double clip_cov_low = 1.0;
  double clip_cov_high = 5.0;
  // kl_cov: share of the loss tokens (at least one) with the largest covariance
  // that get the penalty kl_cov_coef * |log pi - log pi_old|; the paper's 2e-3, 1.
  double kl_cov_fraction = 2e-3;
  double kl_cov_coef = 1.0;

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
  double region_frac = 0;     // dppo_*: share of loss tokens masked for leaving the trust region
  double cov_frac = 0;        // clip_cov: share detached; kl_cov: share penalised
};

struct PolicyLossResult {
  torch::Tensor per_token;  // [B, T] loss = -(clipped surrogate); 0 where mask == 0;
                            // differentiable w.r.t. logp; dtype of logp
  PolicyLossStats stats;
};

// Per-token loss of options.objective; throws rlf::Error on shape/dtype
// mismatch. `guard` [B, T] (optional): nonzero on the tokens the off-policy
// safeguards (ratio_cap, mask_low/high) apply to; undefined = none.
// clip_cov picks its tokens pseudo-randomly with a generator seeded from the
// call's own loss tokens (targets are not passed: their log-probs and
// positions), so the choice is the same every time the same data comes
// (reproducible, resume-exact) and differs between micro-batches. Clip-Cov
// and KL-Cov centre the covariance over this call's loss tokens (the
// micro-batch, as verl does). Sequence-level ratios combine with clip and
// cispo only.
PolicyLossResult policy_loss(const torch::Tensor& logp, const torch::Tensor& old_logp,
                             const torch::Tensor& advantages, const torch::Tensor& mask,
                             const PolicyLossOptions& options = {}, const torch::Tensor& guard = {});

}  // namespace rlf::algo

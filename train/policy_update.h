// The gradient half of a policy-gradient step: episodes -> padded
// micro-batches -> log-probs from the model's forward -> per-token policy
// loss (+ KL to the reference, - entropy bonus) -> aggregated loss ->
// backward. Gradients accumulate in the model's parameters; the caller owns
// zero_grad() and the optimizer step, so one optimisation step may span
// several calls (gradient accumulation) with the loss normalised globally.
//
// Also the SFT loss (token-mean NLL on loss_weight > 0 tokens) and log-prob
// recomputation (reference model, rollout/trainer agreement).
#pragma once

#include <torch/torch.h>

#include <vector>

#include "algorithms/kl.h"
#include "algorithms/loss_aggregation.h"
#include "algorithms/policy_loss.h"
#include "model/transformer.h"
#include "train/episode.h"

namespace rlf {

// Episodes laid out as right-padded [B, T] tensors (T = longest length - 1):
// position t predicts token t + 1.
struct MicroBatch {
  torch::Tensor input_ids;  // [B, T] int64
  torch::Tensor positions;  // [B, T] int64
  torch::Tensor key_mask;   // [B, T] bool, false on padding
  torch::Tensor targets;    // [B, T] int64
  torch::Tensor mask;       // [B, T] fp32: loss weight of the target token (0 on prompt/padding)
  torch::Tensor old_logp;   // [B, T] fp32
  torch::Tensor ref_logp;   // [B, T] fp32, or undefined when the episodes carry none
  torch::Tensor advantages; // [B, T] fp32 (the sequence advantage on its tokens)
};

MicroBatch make_micro_batch(const std::vector<const Episode*>& episodes, torch::Device device);

struct UpdateOptions {
  int64_t micro_batch_size = 8;           // sequences per forward/backward
  algo::PolicyLossOptions loss;                 // clipping (eps_low/high, dual clip, token/sequence ratio)
  algo::AggregationOptions aggregation;         // token_mean (global) | seq_mean_token_mean | seq_mean_token_sum_norm
  double kl_beta = 0;                     // weight of the KL-to-reference term in the loss (0 = off)
  algo::KlEstimator kl_estimator = algo::KlEstimator::K3;
  double entropy_coef = 0;                // entropy bonus (subtracted from the loss); 0 = off

  void validate() const;
};

struct UpdateStats {
  double loss = 0;              // the aggregated loss that was back-propagated (summed over micro-batches)
  double policy_loss = 0;       // mean per-token policy loss
  double kl = 0;                // mean per-token KL estimate to the reference (0 without one)
  double entropy = 0;           // mean per-token entropy of the policy
  double clip_frac_low = 0, clip_frac_high = 0, clip_frac_dual = 0;
  double ratio_mean = 0, ratio_max = 0, approx_kl = 0;
  double logprob_diff_max = 0;  // max |trainer log-prob - stored old log-prob| over loss tokens
  double n_tokens = 0;          // loss tokens
  bool finite = true;           // false when the loss was NaN/Inf (nothing was back-propagated)
};

// Accumulates policy-gradient gradients for `episodes` (all of one
// optimisation step) into the model's parameters.
UpdateStats accumulate_policy_gradients(CausalLMImpl& model, const std::vector<Episode>& episodes,
                                        const UpdateOptions& options);

// Accumulates the SFT gradient (token-mean NLL over loss_weight > 0 tokens,
// normalised over the whole step). Returns the mean NLL; NaN/Inf sets finite=false.
UpdateStats accumulate_sft_gradients(CausalLMImpl& model, const std::vector<Episode>& episodes,
                                     int64_t micro_batch_size);

// Log-probs of every episode's tokens under `model` (no gradient):
// out[i][t] = log p(tokens[t] | tokens[< t]) for t >= 1 (out[i][0] = 0).
std::vector<std::vector<float>> recompute_logprobs(CausalLMImpl& model, const std::vector<Episode>& episodes,
                                                   int64_t micro_batch_size);

}  // namespace rlf

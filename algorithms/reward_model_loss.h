// The math of reward models, as pure functions (docs/algorithms.md section 12).
//
//   Bradley-Terry (Ouyang et al. 2022; with a margin, Touvron et al. 2023):
//     L = -log sigma(r_c - r_r - m)
//     r_c, r_r the scores of the chosen and rejected response, m >= 0 a margin
//   expected calibration error of pairwise preferences (Guo et al. 2017,
//   symmetrised): every pair gives the prediction P(chosen wins) =
//   sigma(r_c - r_r) with outcome 1 and its mirror 1 - P with outcome 0; with
//   B equal-width bins of the predicted probability,
//     ECE = sum_b (n_b / N) |mean outcome_b - mean prediction_b|
//   multi-objective regression (ArmoRM stage 1, Wang et al. 2024): K heads
//   r_k(x, y) fit per-attribute ratings y_k by least squares,
//     L = (1 / |R|) sum_{k in R} (r_k - y_k)^2,  R = the attributes rated
//   mixture of experts gating (ArmoRM stage 2): a gating network over the
//   prompt's features h(x) gives weights g(x) = softmax(z(x) / tau) over the
//   attributes, and the reward is
//     r(x, y) = s * sum_k g_k(x) r_k(x, y)      (s > 0 a learnt scale)
//   trained by the Bradley-Terry loss on preference pairs, heads frozen
//   process reward models (Lightman et al. 2023; Wang et al. 2024,
//   Math-Shepherd): a score z_k at the last token of each step k, trained by
//   binary cross-entropy on the step's label y_k in [0, 1] (1 = the step is
//   right; a Monte-Carlo label is the share of rollouts from the step that
//   reach the right answer),
//     L_k = -y_k log sigma(z_k) - (1 - y_k) log(1 - sigma(z_k))
//   step rewards from the step probabilities p_k = sigma(z_k), bounded so
//   that a policy cannot farm them by writing more steps (Gao et al. 2024,
//   "On Designing Effective RL Reward at Training Time for LLM Reasoning"):
//     none   r_k = p_k
//     clip   r_k = min(p_k - eta, 0)           (every step costs unless it is judged right)
//     delta  r_k = p_k - p_{k+1},  r_K = p_K    (the return from step k is p_k)
//   correlations of scores with ratings: Pearson's r, and Spearman's rho
//   (Pearson's r of the ranks, ties given their mean rank)
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include <torch/types.h>

namespace rlf::algo {

// Per-pair Bradley-Terry loss [P] (gradient through both score tensors).
// `margin` [P] or undefined (0). Computed as softplus(-(r_c - r_r - m)), exact for large margins.
torch::Tensor bradley_terry_loss(const torch::Tensor& chosen, const torch::Tensor& rejected,
                                 const torch::Tensor& margin = {});

// Symmetrised ECE of pairwise predictions from score margins r_c - r_r (bins > 0).
double pairwise_calibration_error(const std::vector<double>& margins, int64_t bins = 10);

// Per-row regression loss [N] of scores [N, K] against ratings [N, K] (NaN =
// not rated: no loss, no gradient); a row rating nothing has loss 0.
torch::Tensor rating_regression_loss(const torch::Tensor& scores, const torch::Tensor& ratings);

// The gated reward [N] of attribute scores [N, K] under gating logits [N, K]
// (tau > 0; `scale` a scalar tensor): scale * sum_k softmax(logits / tau)_k * scores_k.
torch::Tensor gated_reward(const torch::Tensor& gate_logits, const torch::Tensor& scores, const torch::Tensor& scale,
                           double temperature = 1.0);

// Per-element binary cross-entropy of logits against labels in [0, 1] (same
// shape), computed stably from the logits.
torch::Tensor process_reward_loss(const torch::Tensor& logits, const torch::Tensor& labels);

// How step probabilities become step rewards (see above).
enum class StepBounding { None, Clip, Delta };
StepBounding parse_step_bounding(std::string_view name);  // "none" | "clip" | "delta"
std::string_view step_bounding_name(StepBounding bounding);
// Step rewards of step probabilities p (in step order); `eta` is clip's threshold.
std::vector<double> bound_step_rewards(const std::vector<double>& p, StepBounding bounding, double eta = 0.5);

// Pearson's r and Spearman's rho of two samples of one size (0 when either
// is constant or there are fewer than two points).
double pearson_correlation(const std::vector<double>& x, const std::vector<double>& y);
double spearman_correlation(const std::vector<double>& x, const std::vector<double>& y);

}  // namespace rlf::algo

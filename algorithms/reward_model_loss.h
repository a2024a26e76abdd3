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
#pragma once

#include <cstdint>
#include <vector>

#include <torch/types.h>

namespace rlf::algo {

// Per-pair Bradley-Terry loss [P] (gradient through both score tensors).
// `margin` [P] or undefined (0). Computed as softplus(-(r_c - r_r - m)), exact for large margins.
torch::Tensor bradley_terry_loss(const torch::Tensor& chosen, const torch::Tensor& rejected,
                                 const torch::Tensor& margin = {});

// Symmetrised ECE of pairwise predictions from score margins r_c - r_r (bins > 0).
double pairwise_calibration_error(const std::vector<double>& margins, int64_t bins = 10);

}  // namespace rlf::algo

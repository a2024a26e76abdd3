// Generalised advantage estimation and advantage whitening (PPO's credit),
// pure functions (docs/algorithms.md section 13).
//
//   GAE (Schulman et al. 2016), over an episode's policy steps k = 0..n-1
//   with rewards r_k and the critic's values V_k (V_n = 0: the episode ends):
//     delta_k = r_k + gamma * V_{k+1} - V_k
//     A_k     = delta_k + gamma * lambda * A_{k+1}        (A_n = 0)
//     R_k     = A_k + V_k                                 (the value target)
//   lambda = 1 gives the Monte-Carlo return minus V; lambda = 0 the one-step
//   TD error.
//
//   Whitening (Ziegler et al. 2019; TRL's masked_whiten): over every
//   selected token of the batch, a <- (a - mean) / sqrt(var + 1e-8), var
//   the unbiased variance; the mean and variance are global across ranks
//   through a BatchSum.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "algorithms/advantages.h"

namespace rlf::algo {

struct GaeResult {
  std::vector<double> advantages;  // A_k
  std::vector<double> returns;     // R_k = A_k + V_k
};

// rewards and values have one entry per step (same length); gamma and
// lambda in [0, 1]. Throws rlf::Error on mismatched lengths, bad
// coefficients or non-finite inputs.
GaeResult gae(std::span<const double> rewards, std::span<const double> values, double gamma, double lambda);

// Whitens values[i][t] where mask[i][t] != 0, in place (others untouched),
// with the mean and unbiased variance over every rank's selected entries.
// Fewer than two selected entries in total: only the mean is removed.
void whiten(std::vector<std::vector<float>>& values, const std::vector<std::vector<uint8_t>>& mask,
            const BatchSum& batch_sum = {});

}  // namespace rlf::algo

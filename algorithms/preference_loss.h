// Preference losses on whole sequences: DPO and its variants, from the
// summed log-probabilities of each pair's chosen (c) and rejected (r)
// response under the policy (pi) and the frozen reference (ref), and their
// response lengths |y| (tokens). Math and papers: docs/algorithms.md.
//
//   sigmoid  DPO (Rafailov et al. 2023), with conservative label smoothing
//            eps (cDPO):  h = beta * ((pi_c - ref_c) - (pi_r - ref_r))
//            L = -(1 - eps) log sigma(h) - eps log sigma(-h)
//   ipo      IPO (Azar et al. 2023):  L = ((pi_c - ref_c) - (pi_r - ref_r) - 1/(2 beta))^2
//   hinge    SLiC-HF (Zhao et al. 2023):  L = max(0, 1 - h)
//   simpo    SimPO (Meng et al. 2024), reference-free and length-normalised:
//            h = beta * (pi_c/|y_c| - pi_r/|y_r|) - gamma
//            L = -(1 - eps) log sigma(h) - eps log sigma(-h)
//   sppo     SPPO (Wu et al. 2024), per sequence, not per pair: each response
//            y of a group is pushed towards log(pi/ref)(y) = (P(y) - 1/2) / beta,
//            P(y) its win rate against the other responses of its group
//            (ties count one half):  L_y = (pi_y - ref_y - (P(y) - 1/2)/beta)^2.
//            For a pair (P = 1 and 0) it is TRL's "sppo_hard".
//
// Implicit rewards (what the accuracy and margin metrics compare):
// beta * (pi - ref) for the reference losses, beta * pi / |y| for simpo.
// All inputs are [P] (pairs) or [N] (sequences), float32 or float64; the
// policy sums carry the gradient, the reference sums are treated as constants.
#pragma once

#include <string_view>
#include <string>
#include <vector>

#include <torch/types.h>

namespace rlf::algo {

enum class PreferenceLoss { Sigmoid, Ipo, Hinge, Simpo, Sppo };

PreferenceLoss parse_preference_loss(std::string_view name);  // "sigmoid", "ipo", "hinge", "simpo", "sppo"
std::string_view preference_loss_name(PreferenceLoss loss);
std::vector<std::string> preference_loss_names();  // every name, in the order docs list them

struct PreferenceLossOptions {
  PreferenceLoss loss = PreferenceLoss::Sigmoid;
  double beta = 0.1;             // > 0: the strength of the implicit KL (DPO 0.1; SimPO's paper uses 2..10)
  double label_smoothing = 0.0;  // sigmoid, simpo: eps in [0, 0.5), the assumed share of flipped labels
  double simpo_gamma = 0.5;      // simpo: target reward margin gamma (>= 0)

  // Reference-free (simpo): no reference log-probs needed.
  bool reference_free() const { return loss == PreferenceLoss::Simpo; }
  // Throws rlf::Error naming the key (preference.beta, ...) and the fix.
  void validate() const;
};

// Per-pair sequence sums (policy with gradient) and lengths.
struct PairLogps {
  torch::Tensor chosen, rejected;          // [P] sum of log pi over each response's tokens
  torch::Tensor ref_chosen, ref_rejected;  // [P] the same under the reference (unused by simpo: may be undefined)
  torch::Tensor chosen_len, rejected_len;  // [P] response tokens (> 0), used by simpo
};

// Per-pair loss [P] of sigmoid, ipo, hinge or simpo (sppo is per sequence:
// sppo_loss). Throws rlf::Error for sppo, bad options or mismatched shapes.
torch::Tensor pairwise_preference_loss(const PairLogps& pairs, const PreferenceLossOptions& options);

// Implicit rewards [P] of the chosen and the rejected responses (detached).
std::pair<torch::Tensor, torch::Tensor> implicit_rewards(const PairLogps& pairs, const PreferenceLossOptions& options);

// SPPO per-sequence loss [N]: logratio = pi - ref (with gradient), win_rate in [0, 1].
torch::Tensor sppo_loss(const torch::Tensor& logratio, const torch::Tensor& win_rate, double beta);

// Win rate of each of `rewards` [N] within its group `groups` [N] (int64):
// the share of the other members it beats, ties counting one half; 0.5 for a
// group of one. Detached float64.
torch::Tensor group_win_rates(const torch::Tensor& rewards, const torch::Tensor& groups);

}  // namespace rlf::algo

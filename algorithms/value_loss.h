// PPO's value loss, a pure function (docs/algorithms.md section 13).
//
//   clipped (Schulman et al. 2017, OpenAI baselines' PPO2, TRL's PPOTrainer):
//     V_clip = V_old + clip(V - V_old, -eps, eps)
//     L_t    = 1/2 * max((V - R)^2, (V_clip - R)^2)
//   eps = 0 turns clipping off: L_t = 1/2 (V - R)^2.
// V the critic's value now (with gradient), V_old its value when the
// episode was scored, R the GAE return (gae.h). Tokens with mask == 0 get 0
// and zero gradient.
#pragma once

#include <torch/types.h>

namespace rlf::algo {

struct ValueLoss {
  torch::Tensor loss;     // [B, T] L_t
  torch::Tensor clipped;  // [B, T] 1 where the clip binds and its branch is the larger (its gradient is 0), else 0;
                          // detached
};

// values, old_values, returns, mask: [B, T]; clip >= 0.
ValueLoss clipped_value_loss(const torch::Tensor& values, const torch::Tensor& old_values,
                             const torch::Tensor& returns, const torch::Tensor& mask, double clip);

}  // namespace rlf::algo

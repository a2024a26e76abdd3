// The KL coefficient of the KL-in-reward penalty, fixed or adaptive
// (docs/algorithms.md section 13).
//
//   adaptive (Ziegler et al. 2019, "Fine-Tuning Language Models from Human
//   Preferences"; TRL's AdaptiveKLController): after a step whose measured
//   KL to the reference is KL over n episodes,
//     e    = clip(KL / KL_target - 1, -0.2, 0.2)
//     beta <- beta * (1 + e * n / horizon)
//   so beta grows while the policy drifts further than the target and
//   shrinks while it stays closer. target = 0: beta stays fixed.
#pragma once

#include <cstdint>

namespace rlf::algo {

struct KlControllerOptions {
  double initial_beta = 0.0;  // algorithm.kl_beta
  double target = 0.0;        // algorithm.kl_target: 0 = fixed beta
  double horizon = 10000;     // algorithm.kl_horizon: episodes over which a full error moves beta by 100%

  // Throws rlf::Error naming the key.
  void validate() const;
};

class KlController {
 public:
  explicit KlController(KlControllerOptions options);
  double beta() const { return beta_; }
  // After a step: `kl` the mean per-token KL measured on its episodes, `n` their number.
  void update(double kl, int64_t n);
  // Checkpoint state.
  void set_beta(double beta);
  bool adaptive() const { return options_.target > 0; }

 private:
  KlControllerOptions options_;
  double beta_;
};

}  // namespace rlf::algo

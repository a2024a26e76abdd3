// Fixed and adaptive KL coefficients; see kl_controller.h.
#include "algorithms/kl_controller.h"

#include <algorithm>
#include <cmath>

#include "util/error.h"

namespace rlf::algo {

void KlControllerOptions::validate() const {
  check(std::isfinite(initial_beta) && initial_beta >= 0, "algorithm.kl_beta must be >= 0 (got ", initial_beta, ")");
  check(std::isfinite(target) && target >= 0, "algorithm.kl_target must be >= 0 (got ", target,
        "; 0 = a fixed algorithm.kl_beta)");
  check(std::isfinite(horizon) && horizon > 0, "algorithm.kl_horizon must be > 0 (got ", horizon, ")");
  check(target == 0 || initial_beta > 0, "algorithm.kl_target adapts algorithm.kl_beta, which is 0: set kl_beta > 0 "
        "as the starting coefficient");
}

KlController::KlController(KlControllerOptions options) : options_(options), beta_(options.initial_beta) {
  options_.validate();
}

void KlController::update(double kl, int64_t n) {
  if (!adaptive() || !std::isfinite(kl)) return;
  const double e = std::clamp(kl / options_.target - 1.0, -0.2, 0.2);
  beta_ *= 1.0 + e * static_cast<double>(n) / options_.horizon;
}

void KlController::set_beta(double beta) {
  check(std::isfinite(beta) && beta >= 0, "kl controller: beta must be >= 0 (got ", beta, ")");
  beta_ = beta;
}

}  // namespace rlf::algo

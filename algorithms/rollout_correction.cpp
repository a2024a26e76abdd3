// Truncated importance sampling and sequence masking against the rollout's
// log-probs; see rollout_correction.h and docs/algorithms.md.
#include "algorithms/rollout_correction.h"

#include <cmath>

#include "algorithms/checks.h"
#include "util/error.h"

namespace rlf::algo {

void RolloutCorrectionOptions::validate() const {
  check(std::isfinite(tis_cap) && tis_cap >= 0, "algorithm.tis_cap must be >= 0 (0 = off), got ", tis_cap,
        " (verl's default is 2)");
  check(std::isfinite(mask_low) && mask_low >= 0 && mask_low < 1,
        "algorithm.mismatch_mask_low must be in [0, 1) (0 = off), got ", mask_low);
  check(std::isfinite(mask_high) && (mask_high == 0 || mask_high > 1),
        "algorithm.mismatch_mask_high must be 0 (off) or > 1, got ", mask_high);
}

RolloutCorrection rollout_correction(const torch::Tensor& old_logp, const torch::Tensor& behaviour_logp,
                                     const torch::Tensor& mask, const RolloutCorrectionOptions& options) {
  options.validate();
  constexpr std::string_view fn = "rollout_correction";
  detail::check_bt(old_logp, fn, "old_logp");
  detail::check_float_like(behaviour_logp, old_logp, fn, "behaviour_logp", "old_logp");
  check(mask.defined() && mask.sizes() == old_logp.sizes(), fn, ": mask must have the shape of old_logp ",
        old_logp.sizes());
  torch::NoGradGuard no_grad;
  const auto f64 = torch::TensorOptions().dtype(torch::kFloat64).device(old_logp.device());
  const auto zero = torch::zeros({}, f64);
  const auto on = mask != 0;
  // log r = log pi_old - log mu, clamped as the policy loss clamps its log-ratios.
  const auto log_r = torch::where(on, old_logp.to(torch::kFloat64) - behaviour_logp.to(torch::kFloat64), zero)
                         .clamp(-20.0, 20.0);
  const auto r = log_r.exp();
  auto w = torch::where(on, r, zero);
  torch::Tensor capped;
  if (options.tis_cap > 0) {
    capped = on & (r > options.tis_cap);
    w = torch::where(capped, torch::full({}, options.tis_cap, f64), w);
  } else {
    w = torch::where(on, torch::ones({}, f64), zero);  // no TIS: weight 1 on loss tokens
  }
  const auto n_row = on.sum(1);                                          // [B]
  const auto has = n_row > 0;                                            // [B]
  const auto geo = (log_r.sum(1) / n_row.clamp_min(1).to(torch::kFloat64)).exp();  // [B]
  auto out = torch::zeros_like(has);
  if (options.mask_low > 0) out = out | (geo < options.mask_low);
  if (options.mask_high > 0) out = out | (geo > options.mask_high);
  out = out & has;
  w = torch::where(out.unsqueeze(1), zero, w);

  RolloutCorrection result;
  result.weight = w.to(torch::kFloat32);
  auto& s = result.stats;
  s.n_tokens = on.sum().item<double>();
  s.n_sequences = has.sum().item<double>();
  if (s.n_tokens > 0) {
    s.weight_mean = w.sum().item<double>() / s.n_tokens;
    if (capped.defined()) s.capped_frac = capped.sum().item<double>() / s.n_tokens;
    s.kl = torch::where(on, torch::expm1(log_r) - log_r, zero).sum().item<double>() / s.n_tokens;
  }
  if (s.n_sequences > 0) s.masked_seq_frac = out.sum().item<double>() / s.n_sequences;
  return result;
}

}  // namespace rlf::algo

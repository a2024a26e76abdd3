// KL estimators to a frozen reference; see kl.h and docs/algorithms.md.
#include "algorithms/kl.h"

#include <cmath>

#include "algorithms/checks.h"
#include "algorithms/names.h"
#include "util/error.h"

namespace rlf::algo {
namespace {

constexpr detail::NameTable<KlEstimator, 3> kKlNames{{
    {KlEstimator::K1, "k1"},
    {KlEstimator::K2, "k2"},
    {KlEstimator::K3, "k3"},
}};

}  // namespace

KlEstimator parse_kl_estimator(std::string_view name) { return detail::parse_name(kKlNames, "KL estimator", name); }

std::vector<std::string> kl_estimator_names() { return detail::names_list(kKlNames); }

std::string_view kl_estimator_name(KlEstimator estimator) { return detail::name_of(kKlNames, estimator); }

torch::Tensor kl_estimate(const torch::Tensor& logp, const torch::Tensor& ref_logp, const torch::Tensor& mask,
                          KlEstimator estimator) {
  constexpr std::string_view fn = "kl_estimate";
  detail::check_bt(logp, fn, "logp");
  detail::check_float_like(logp, logp, fn, "logp", "logp");
  detail::check_float_like(ref_logp, logp, fn, "ref_logp", "logp");
  detail::check_bt(mask, fn, "mask");
  check(mask.sizes() == logp.sizes(), fn, ": mask has shape ", mask.sizes(), " but logp has ", logp.sizes(),
        "; they must match");

  const auto on = mask != 0;
  const auto zero = torch::zeros({}, logp.options());
  // d = log(pi_ref / pi_theta); masked tokens get d = 0, hence k = 0 and no gradient.
  const auto d = torch::where(on, ref_logp.detach().to(logp.scalar_type()) - logp, zero);  // [B, T]
  switch (estimator) {
    case KlEstimator::K1:
      return -d;
    case KlEstimator::K2:
      return 0.5 * d * d;
    case KlEstimator::K3:
      return torch::expm1(d) - d;  // exp(d) - 1 - d, accurate for small d
  }
  fail(fn, ": unhandled KL estimator");
}

torch::Tensor kl_reward_penalty(const torch::Tensor& logp, const torch::Tensor& ref_logp,
                                const torch::Tensor& mask, KlEstimator estimator, double beta) {
  check(std::isfinite(beta) && beta >= 0.0, "kl_reward_penalty: beta must be a finite value >= 0, got ", beta);
  torch::NoGradGuard no_grad;
  return -beta * kl_estimate(logp.detach(), ref_logp, mask, estimator);
}

}  // namespace rlf::algo

#include "train/loss_terms.h"

#include <cmath>

#include "algorithms/policy_shaping.h"
#include "util/error.h"

namespace rlf {

namespace {

double weighted_sum(const torch::Tensor& x, const torch::Tensor& w) {
  torch::NoGradGuard ng;
  return torch::where(w != 0, x.detach() * w, torch::zeros({}, x.options())).sum().item<double>();
}

}  // namespace

PolicyGradientTerm::PolicyGradientTerm(algo::PolicyLossOptions loss, algo::AggregationOptions aggregation,
                                       double shaping_gamma)
    : loss_(loss), aggregation_(aggregation), shaping_gamma_(shaping_gamma) {
  loss_.validate();
  aggregation_.validate();
  check(std::isfinite(shaping_gamma_) && shaping_gamma_ > 0, "refine.gamma must be > 0 (got ", shaping_gamma_,
        "; Critique-GRPO uses 0.1)");
}

torch::Tensor PolicyGradientTerm::per_token(const TermInput& in, TermSums& sums) const {
  check(in.mb.advantages.defined(), "loss term 'policy': the episodes carry no advantages");
  // Refinement tokens take the shaped objective, every other weighted token the clipped surrogate.
  torch::Tensor clipped_mask = in.mb.weight, guard = in.mb.off_policy, shaped_mask;
  if (in.mb.shaped.defined()) {
    shaped_mask = in.mb.weight * in.mb.shaped;
    clipped_mask = in.mb.weight * (1 - in.mb.shaped);
    guard = in.mb.off_policy * (1 - in.mb.shaped);
  }
  algo::PolicyLossResult pl =
      algo::policy_loss(in.logp, in.mb.old_logp, in.mb.advantages, clipped_mask, loss_, guard);
  if (shaped_mask.defined()) {
    pl.per_token = pl.per_token + algo::shaped_policy_loss(in.logp, in.mb.advantages, shaped_mask, shaping_gamma_);
    torch::NoGradGuard ng;
    sums["policy/shaped_frac"] += (shaped_mask != 0).sum().item<double>();  // share of the step's loss tokens
  }
  const auto& s = pl.stats;
  const double n = s.n_tokens;  // loss tokens of this micro-batch (the means below are over them)
  sums["policy/loss"] += weighted_sum(pl.per_token, in.mb.weight);
  sums["policy/clip_frac_low"] += s.clip_frac_low * n;
  sums["policy/clip_frac_high"] += s.clip_frac_high * n;
  sums["policy/clip_frac_dual"] += s.clip_frac_dual * n;
  sums["policy/ratio_mean"] += s.ratio_mean * n;
  sums["policy/approx_kl"] += s.approx_kl * n;
  if (loss_.ratio_cap > 0 || loss_.mask_low > 0 || loss_.mask_high > 0) {
    sums["policy/off_policy_capped_frac"] += s.capped_frac * n;
    sums["policy/off_policy_masked_frac"] += s.masked_frac * n;
  }
  return pl.per_token;
}

torch::Tensor CrossEntropyTerm::per_token(const TermInput& in, TermSums& sums) const {
  const auto zero = torch::zeros({}, in.logp.options());
  auto nll = torch::where(in.mb.weight != 0, -in.logp, zero);
  sums["ce/nll"] += weighted_sum(nll, in.mb.weight);
  return nll;
}

KlTerm::KlTerm(double beta, algo::KlEstimator estimator, algo::AggregationOptions aggregation)
    : beta_(beta), estimator_(estimator), aggregation_(aggregation) {
  check(std::isfinite(beta_) && beta_ > 0, "algorithm.kl_beta must be > 0 for the kl term (got ", beta_, ")");
  aggregation_.validate();
}

torch::Tensor KlTerm::per_token(const TermInput& in, TermSums& sums) const {
  check(in.mb.ref_logp.defined(), "loss term 'kl': the episodes carry no reference log-probs");
  auto kl = algo::kl_estimate(in.logp, in.mb.ref_logp, in.mb.weight, estimator_);
  sums["kl/term"] += weighted_sum(kl, in.mb.weight);  // also the trainer's kl/ref metric
  return kl;
}

EntropyTerm::EntropyTerm(double coef, algo::AggregationOptions aggregation) : coef_(coef), aggregation_(aggregation) {
  check(std::isfinite(coef_) && coef_ != 0, "algorithm.entropy_coef must be finite and non-zero for the entropy term");
  aggregation_.validate();
}

torch::Tensor EntropyTerm::per_token(const TermInput& in, TermSums& sums) const {
  check(in.entropy.defined() && in.entropy.requires_grad(), "loss term 'entropy': no entropy with gradient");
  const auto zero = torch::zeros({}, in.entropy.options());
  return torch::where(in.mb.weight != 0, -in.entropy, zero);
}

DistillTerm::DistillTerm(double coef, algo::KlEstimator estimator, algo::AggregationOptions aggregation)
    : coef_(coef), estimator_(estimator), aggregation_(aggregation) {
  check(std::isfinite(coef_) && coef_ > 0, "distill.coef must be > 0 (got ", coef_, ")");
  aggregation_.validate();
}

torch::Tensor DistillTerm::weights(const MicroBatch& mb) const {
  return mb.teacher_mask.defined() ? mb.weight * mb.teacher_mask : torch::zeros_like(mb.weight);
}

torch::Tensor DistillTerm::per_token(const TermInput& in, TermSums& sums) const {
  if (!in.mb.teacher_logp.defined()) return torch::zeros_like(in.logp);
  const auto w = weights(in.mb);
  auto kl = algo::kl_estimate(in.logp, in.mb.teacher_logp, w, estimator_);
  sums["distill/kl"] += weighted_sum(kl, w);  // the teacher-student KL estimate, per teacher token
  return kl;
}

}  // namespace rlf

#include "train/loss_terms.h"

#include <cmath>

#include "algorithms/policy_shaping.h"
#include "algorithms/reward_model_loss.h"
#include "algorithms/value_loss.h"
#include "util/error.h"

namespace rlf {

namespace {

double weighted_sum(const torch::Tensor& x, const torch::Tensor& w) {
  torch::NoGradGuard ng;
  return torch::where(w != 0, x.detach() * w, torch::zeros({}, x.options())).sum().item<double>();
}

}  // namespace

PolicyGradientTerm::PolicyGradientTerm(algo::PolicyLossOptions loss, algo::AggregationOptions aggregation,
                                       algo::OffPolicyLossOptions refinement, algo::RolloutCorrectionOptions correction)
    : loss_(loss), aggregation_(aggregation), refinement_(refinement), correction_(correction) {
  loss_.validate();
  correction_.validate();
  aggregation_.validate();
  check(std::isfinite(refinement_.gamma) && refinement_.gamma > 0, "refine.gamma must be > 0 (got ", refinement_.gamma,
        "; Critique-GRPO uses 0.1)");
}

torch::Tensor PolicyGradientTerm::per_token(const TermInput& in, TermSums& sums) const {
  check(in.mb.has(Stream::advantage), "loss term 'policy': the episodes carry no advantages");
  // Refinement tokens take refine.objective (shaped or likelihood), every other weighted token the clipped surrogate.
  const MicroBatch& mb = in.mb;
  const auto& weight = mb[Stream::loss_weight];
  torch::Tensor clipped_mask = weight, guard = mb[Stream::off_policy], shaped_mask;
  if (mb.has(Stream::shaped)) {
    shaped_mask = weight * mb[Stream::shaped];
    clipped_mask = weight * (1 - mb[Stream::shaped]);
    guard = mb[Stream::off_policy] * (1 - mb[Stream::shaped]);
  }
  algo::PolicyLossResult pl =
      algo::policy_loss(in.logp, mb[Stream::old_logprob], mb[Stream::advantage], clipped_mask, loss_, guard);
  if (correction_.active() && mb.has(Stream::behaviour_logprob)) {
    // Rows whose old log-probs the trainer recomputed (rollout episodes; NaN elsewhere). Their tokens count
    // as off-policy in later mini-batches and epochs of the step, yet both numbers belong to the sampling weights.
    const auto& behaviour = mb[Stream::behaviour_logprob];
    const auto rollout_mask = clipped_mask * (behaviour == behaviour).to(clipped_mask.scalar_type());
    const auto rc = algo::rollout_correction(mb[Stream::old_logprob], behaviour, rollout_mask, correction_);
    pl.per_token = torch::where(rollout_mask != 0, pl.per_token * rc.weight, pl.per_token);
    const double n = rc.stats.n_tokens;
    sums["mismatch/tis_weight_mean"] += rc.stats.weight_mean * n;
    sums["mismatch/capped_frac"] += rc.stats.capped_frac * n;
    sums["mismatch/kl"] += rc.stats.kl * n;
    torch::NoGradGuard ng;
    sums["mismatch/masked_frac"] += ((rc.weight == 0) & (rollout_mask != 0)).sum().item<double>();
  }
  if (shaped_mask.defined()) {
    pl.per_token = pl.per_token + algo::off_policy_loss(in.logp, mb[Stream::advantage], shaped_mask, refinement_);
    torch::NoGradGuard ng;
    sums["policy/shaped_frac"] += (shaped_mask != 0).sum().item<double>();  // share of the step's loss tokens
  }
  const auto& s = pl.stats;
  const double n = s.n_tokens;  // loss tokens of this micro-batch (the means below are over them)
  sums["policy/loss"] += weighted_sum(pl.per_token, weight);
  sums["policy/clip_frac_low"] += s.clip_frac_low * n;
  sums["policy/clip_frac_high"] += s.clip_frac_high * n;
  sums["policy/clip_frac_dual"] += s.clip_frac_dual * n;
  sums["policy/ratio_mean"] += s.ratio_mean * n;
  sums["policy/approx_kl"] += s.approx_kl * n;
  if (loss_.ratio_cap > 0 || loss_.mask_low > 0 || loss_.mask_high > 0) {
    sums["policy/off_policy_capped_frac"] += s.capped_frac * n;
    sums["policy/off_policy_masked_frac"] += s.masked_frac * n;
  }
  if (loss_.objective == algo::PolicyObjective::DppoTv || loss_.objective == algo::PolicyObjective::DppoKl)
    sums["policy/region_frac"] += s.region_frac * n;
  if (loss_.objective == algo::PolicyObjective::ClipCov || loss_.objective == algo::PolicyObjective::KlCov)
    sums["policy/cov_frac"] += s.cov_frac * n;
  return pl.per_token;
}

NftTerm::NftTerm(algo::NftOptions options, algo::AggregationOptions aggregation)
    : options_(options), aggregation_(aggregation) {
  options_.validate();
  aggregation_.validate();
}

torch::Tensor NftTerm::weights(const MicroBatch& mb) const {
  const auto& correct = mb[Stream::seq_correct];
  const auto rows = algo::nft_rows(mb[Stream::seq_accuracy]) * (correct == correct).to(torch::kFloat32);
  return mb[Stream::loss_weight] * rows.unsqueeze(1).to(mb[Stream::loss_weight].device());
}

torch::Tensor NftTerm::per_token(const TermInput& in, TermSums& sums) const {
  const auto w = weights(in.mb);
  const auto r = algo::nft_loss(in.logp, in.mb[Stream::old_logprob], torch::nan_to_num(in.mb[Stream::seq_correct], 0.0),
                                in.mb[Stream::seq_accuracy], w, options_);
  sums["nft/loss"] += weighted_sum(r.per_token, w);
  sums["nft/clamped_frac"] += r.stats.clamped_frac * r.stats.n_tokens;
  sums["nft/ratio_mean"] += r.stats.ratio_mean * r.stats.n_tokens;
  return r.per_token;
}

torch::Tensor CrossEntropyTerm::per_token(const TermInput& in, TermSums& sums) const {
  const auto zero = torch::zeros({}, in.logp.options());
  auto nll = torch::where(in.mb[Stream::loss_weight] != 0, -in.logp, zero);
  sums["ce/nll"] += weighted_sum(nll, in.mb[Stream::loss_weight]);
  return nll;
}

KlTerm::KlTerm(double beta, algo::KlEstimator estimator, algo::AggregationOptions aggregation)
    : beta_(beta), estimator_(estimator), aggregation_(aggregation) {
  check(std::isfinite(beta_) && beta_ > 0, "algorithm.kl_beta must be > 0 for the kl term (got ", beta_, ")");
  aggregation_.validate();
}

torch::Tensor KlTerm::per_token(const TermInput& in, TermSums& sums) const {
  check(in.mb.has(Stream::ref_logprob), "loss term 'kl': the episodes carry no reference log-probs");
  auto kl = algo::kl_estimate(in.logp, in.mb[Stream::ref_logprob], in.mb[Stream::loss_weight], estimator_);
  sums["kl/term"] += weighted_sum(kl, in.mb[Stream::loss_weight]);  // also the trainer's kl/ref metric
  return kl;
}

EntropyTerm::EntropyTerm(double coef, algo::AggregationOptions aggregation) : coef_(coef), aggregation_(aggregation) {
  check(std::isfinite(coef_) && coef_ != 0, "algorithm.entropy_coef must be finite and non-zero for the entropy term");
  aggregation_.validate();
}

torch::Tensor EntropyTerm::per_token(const TermInput& in, TermSums& sums) const {
  check(in.entropy.defined() && in.entropy.requires_grad(), "loss term 'entropy': no entropy with gradient");
  const auto zero = torch::zeros({}, in.entropy.options());
  return torch::where(in.mb[Stream::loss_weight] != 0, -in.entropy, zero);
}

DistillTerm::DistillTerm(double coef, algo::KlEstimator estimator, algo::AggregationOptions aggregation)
    : coef_(coef), estimator_(estimator), aggregation_(aggregation) {
  check(std::isfinite(coef_) && coef_ > 0, "distill.coef must be > 0 (got ", coef_, ")");
  aggregation_.validate();
}

torch::Tensor DistillTerm::weights(const MicroBatch& mb) const { return mb.weight_where(Stream::teacher_logprob); }

torch::Tensor DistillTerm::per_token(const TermInput& in, TermSums& sums) const {
  if (!in.mb.has(Stream::teacher_logprob)) return torch::zeros_like(in.logp);
  const auto w = weights(in.mb);
  auto kl = algo::kl_estimate(in.logp, in.mb[Stream::teacher_logprob], w, estimator_);
  sums["distill/kl"] += weighted_sum(kl, w);  // the teacher-student KL estimate, per teacher token
  return kl;
}

namespace {

// Rows of a micro-batch that a preference term trains on: (chosen, rejected)
// row pairs, the first best and first worst rewarded episode of each group
// whose rewards differ (pairwise losses), or every rewarded row of a group of
// two or more (SPPO).
struct PreferenceRows {
  std::vector<int64_t> chosen, rejected;  // pairwise
  std::vector<int64_t> rows;              // sppo
};

PreferenceRows preference_rows(const MicroBatch& mb, bool per_sequence) {
  const auto g = mb[Stream::seq_group].contiguous();
  const auto r = mb[Stream::seq_reward].contiguous();
  const int64_t* gv = g.data_ptr<int64_t>();
  const double* rv = r.data_ptr<double>();
  const int64_t B = g.numel();
  PreferenceRows out;
  std::vector<bool> seen(static_cast<size_t>(B), false);
  for (int64_t i = 0; i < B; ++i) {
    if (seen[i]) continue;
    int64_t best = -1, worst = -1;
    std::vector<int64_t> members;
    for (int64_t j = i; j < B; ++j) {
      if (gv[j] != gv[i]) continue;
      seen[j] = true;
      if (!std::isfinite(rv[j])) continue;
      members.push_back(j);
      if (best < 0 || rv[j] > rv[best]) best = j;
      if (worst < 0 || rv[j] < rv[worst]) worst = j;
    }
    if (per_sequence) {
      if (members.size() >= 2) out.rows.insert(out.rows.end(), members.begin(), members.end());
    } else if (best >= 0 && rv[best] > rv[worst]) {
      out.chosen.push_back(best);
      out.rejected.push_back(worst);
    }
  }
  return out;
}

torch::Tensor index_tensor(const std::vector<int64_t>& v, torch::Device device) {
  return torch::tensor(v, torch::TensorOptions().dtype(torch::kInt64)).to(device);
}

// The loss weights of `rows`' rows; 0 elsewhere.
torch::Tensor rows_weights(const MicroBatch& mb, const PreferenceRows& rows) {
  std::vector<float> keep(static_cast<size_t>(mb.n_sequences), 0.0f);
  for (const auto* v : {&rows.chosen, &rows.rejected, &rows.rows})
    for (int64_t i : *v) keep[static_cast<size_t>(i)] = 1.0f;
  auto k = torch::tensor(keep, torch::TensorOptions().dtype(torch::kFloat32)).to(mb[Stream::loss_weight].device());
  return mb[Stream::loss_weight] * k.unsqueeze(1);
}

}  // namespace

PreferenceTerm::PreferenceTerm(algo::PreferenceLossOptions options) : options_(options) { options_.validate(); }

torch::Tensor PreferenceTerm::weights(const MicroBatch& mb) const {
  return rows_weights(mb, preference_rows(mb, options_.loss == algo::PreferenceLoss::Sppo));
}

torch::Tensor PreferenceTerm::per_token(const TermInput& in, TermSums& sums) const {
  const MicroBatch& mb = in.mb;
  const bool sppo = options_.loss == algo::PreferenceLoss::Sppo;
  const PreferenceRows rows = preference_rows(mb, sppo);
  const auto w = rows_weights(mb, rows);
  const auto on = w > 0;
  const auto zero = torch::zeros({}, in.logp.options());
  // Masked positions hold 0 inside the graph: inf/NaN there cannot leak into the sums' gradient.
  const auto seq = torch::where(on, in.logp, zero).sum(1);  // [B] log pi(response)
  const auto len = on.sum(1).to(in.logp.scalar_type());     // [B] response tokens
  torch::Tensor ref;
  if (needs_reference()) {
    check(mb.has(Stream::ref_logprob), "loss term 'pref': preference.loss = \"", algo::preference_loss_name(options_.loss),
          "\" needs reference log-probs and the episodes carry none");
    ref = torch::where(on, mb[Stream::ref_logprob], zero).sum(1);
  }
  auto row_loss = torch::zeros({mb.n_sequences}, in.logp.options());
  if (sppo) {
    if (!rows.rows.empty()) {
      const auto idx = index_tensor(rows.rows, in.logp.device());
      const auto at = index_tensor(rows.rows, torch::kCPU);
      const auto win = algo::group_win_rates(mb[Stream::seq_reward].index_select(0, at),
                                             mb[Stream::seq_group].index_select(0, at))
                           .to(in.logp.device());
      const auto logratio = seq.index_select(0, idx) - ref.index_select(0, idx);
      row_loss = row_loss.index_add(0, idx, algo::sppo_loss(logratio, win, options_.beta));
      torch::NoGradGuard ng;
      sums["pref/logratio"] += logratio.detach().sum().item<double>();
      sums["pref/target_logratio"] += ((win - 0.5) / options_.beta).sum().item<double>();
    }
  } else if (!rows.chosen.empty()) {
    const auto ic = index_tensor(rows.chosen, in.logp.device()), ir = index_tensor(rows.rejected, in.logp.device());
    algo::PairLogps p;
    p.chosen = seq.index_select(0, ic);
    p.rejected = seq.index_select(0, ir);
    p.chosen_len = len.index_select(0, ic);
    p.rejected_len = len.index_select(0, ir);
    if (ref.defined()) p.ref_chosen = ref.index_select(0, ic), p.ref_rejected = ref.index_select(0, ir);
    const auto loss = algo::pairwise_preference_loss(p, options_);
    row_loss = row_loss.index_add(0, ic, loss).index_add(0, ir, loss);
    torch::NoGradGuard ng;
    const auto [rc, rr] = algo::implicit_rewards(p, options_);
    // Each pair has two rows and the sums are divided by the rows: twice the per-pair values.
    sums["pref/accuracy"] += 2 * (rc > rr).to(torch::kFloat64).sum().item<double>();
    sums["pref/margin"] += 2 * (rc - rr).sum().item<double>();
    sums["pref/chosen_reward"] += 2 * rc.sum().item<double>();
    sums["pref/rejected_reward"] += 2 * rr.sum().item<double>();
    sums["pref/chosen_logp"] += 2 * (p.chosen.detach() / p.chosen_len).sum().item<double>();
    sums["pref/rejected_logp"] += 2 * (p.rejected.detach() / p.rejected_len).sum().item<double>();
  }
  return torch::where(on, row_loss.unsqueeze(1).expand_as(in.logp), zero);
}

RewardModelTerm::RewardModelTerm(double margin, int64_t label) : margin_(margin), label_(label) {
  check(std::isfinite(margin) && margin >= 0, "reward_model.margin must be a finite number >= 0 (got ", margin, ")");
  check(label >= 0, "reward model label must be >= 0 (got ", label, ")");
}

torch::Tensor RewardModelTerm::weights(const MicroBatch& mb) const { return rows_weights(mb, preference_rows(mb, false)); }

torch::Tensor RewardModelTerm::per_token(const TermInput& in, TermSums& sums) const {
  const MicroBatch& mb = in.mb;
  check(in.scores.defined(), "loss term 'rm': the model has no score head (train a reward model: trainer.kind = \"rm\")");
  check(label_ < in.scores.size(2), "loss term 'rm': label ", label_, " but the score head has ", in.scores.size(2),
        " outputs");
  const PreferenceRows rows = preference_rows(mb, false);
  const auto w = rows_weights(mb, rows);
  const auto on = w > 0;
  const int64_t B = in.scores.size(0);
  // Each row's score at its last input position (the response's last token; the EOS is only a target).
  const auto last = (mb[Stream::key_mask].to(torch::kInt64).sum(1) - 1).to(in.scores.device());
  const auto score = in.scores.select(2, label_).gather(1, last.view({B, 1})).squeeze(1);  // [B]
  auto row_loss = torch::zeros({B}, in.scores.options());
  if (!rows.chosen.empty()) {
    const auto ic = index_tensor(rows.chosen, score.device()), ir = index_tensor(rows.rejected, score.device());
    const auto rc = score.index_select(0, ic), rr = score.index_select(0, ir);
    torch::Tensor margin;
    if (margin_ > 0) margin = torch::full_like(rc, margin_);
    const auto loss = algo::bradley_terry_loss(rc, rr, margin);
    row_loss = row_loss.index_add(0, ic, loss).index_add(0, ir, loss);
    torch::NoGradGuard ng;
    // Each pair has two rows and the sums are divided by the rows: twice the per-pair values.
    sums["rm/accuracy"] += 2 * (rc > rr).to(torch::kFloat64).sum().item<double>();
    sums["rm/margin"] += 2 * (rc - rr).sum().item<double>();
    sums["rm/chosen_score"] += 2 * rc.sum().item<double>();
    sums["rm/rejected_score"] += 2 * rr.sum().item<double>();
  }
  const auto zero = torch::zeros({}, in.scores.options());
  return torch::where(on, row_loss.unsqueeze(1).expand_as(w), zero);
}

torch::Tensor RatingTerm::weights(const MicroBatch& mb) const {
  if (!mb.has(Stream::ratings)) return torch::zeros_like(mb[Stream::loss_weight]);
  const auto rated = mb[Stream::ratings].isfinite().any(1).to(mb[Stream::loss_weight].dtype());
  return mb[Stream::loss_weight] * rated.unsqueeze(1);
}

torch::Tensor RatingTerm::per_token(const TermInput& in, TermSums& sums) const {
  const MicroBatch& mb = in.mb;
  check(in.scores.defined(), "loss term 'rm_rating': the model has no score head (train a reward model: trainer.kind = "
        "\"rm\")");
  const auto w = weights(mb);
  if (!mb.has(Stream::ratings)) return torch::zeros_like(w);
  const auto& ratings = mb[Stream::ratings];
  check(in.scores.size(2) == ratings.size(1), "loss term 'rm_rating': the episodes rate ", ratings.size(1),
        " attributes but the score head has ", in.scores.size(2), " outputs");
  const int64_t B = in.scores.size(0), K = in.scores.size(2);
  // Each row's scores at its last input position (the response's last token; the EOS is only a target).
  const auto last = (mb[Stream::key_mask].to(torch::kInt64).sum(1) - 1).to(in.scores.device());
  const auto score = in.scores.gather(1, last.view({B, 1, 1}).expand({B, 1, K})).squeeze(1);  // [B, K]
  const auto row_loss = algo::rating_regression_loss(score, mb[Stream::ratings]);
  const auto on = w > 0;
  {
    torch::NoGradGuard ng;
    const auto rated_rows = on.any(1);
    sums["rm/rating_mse"] += torch::where(rated_rows, row_loss.detach(), torch::zeros_like(row_loss)).sum().item<double>();
  }
  return torch::where(on, row_loss.unsqueeze(1).expand_as(w), torch::zeros({}, in.scores.options()));
}

torch::Tensor ProcessRewardTerm::weights(const MicroBatch& mb) const { return mb.weight_where(Stream::step_label); }

torch::Tensor ProcessRewardTerm::per_token(const TermInput& in, TermSums& sums) const {
  const MicroBatch& mb = in.mb;
  check(in.scores.defined(), "loss term 'prm': the model has no score head (train a reward model: trainer.kind = "
        "\"rm\")");
  const auto w = weights(mb);
  if (!mb.has(Stream::step_label)) return torch::zeros_like(w);
  const auto& label = mb[Stream::step_label];
  const auto z = in.scores.select(2, 0);
  const auto on = w > 0;
  const auto zero = torch::zeros({}, z.options());
  const auto loss = torch::where(on, algo::process_reward_loss(z, label), zero);
  {
    torch::NoGradGuard ng;
    const auto p = torch::sigmoid(z.detach());
    sums["prm/accuracy"] += weighted_sum(((p > 0.5) == (label > 0.5)).to(torch::kFloat32), w);
    sums["prm/p_mean"] += weighted_sum(p, w);
    sums["prm/label_mean"] += weighted_sum(label, w);
  }
  return loss;
}

ValueTerm::ValueTerm(double clip, int64_t label, double coef) : clip_(clip), label_(label), coef_(coef) {
  check(std::isfinite(coef) && coef > 0, "value.coef must be > 0 (got ", coef, ")");
  check(std::isfinite(clip) && clip >= 0, "value.clip must be a finite number >= 0 (got ", clip, "; 0 = no clipping)");
  check(label >= 0, "value head label must be >= 0 (got ", label, ")");
}

torch::Tensor ValueTerm::weights(const MicroBatch& mb) const { return mb.weight_where(Stream::value_target); }

torch::Tensor ValueTerm::per_token(const TermInput& in, TermSums& sums) const {
  const MicroBatch& mb = in.mb;
  check(in.scores.defined(), "loss term 'value': the critic has no score head");
  check(label_ < in.scores.size(2), "loss term 'value': label ", label_, " but the score head has ", in.scores.size(2),
        " outputs");
  const auto w = weights(mb);
  if (!mb.has(Stream::value_target)) return torch::zeros_like(w);
  check(mb.has(Stream::value), "loss term 'value': the episodes carry value targets but no critic values");
  const auto v = in.scores.select(2, label_);
  const auto& target = mb[Stream::value_target];
  const algo::ValueLoss vl = algo::clipped_value_loss(v, mb[Stream::value], target, w, clip_);
  sums["value/clipfrac"] += weighted_sum(vl.clipped, w);
  sums["value/mean"] += weighted_sum(v, w);
  sums["value/return_mean"] += weighted_sum(target, w);
  sums["value/error"] += weighted_sum((v.detach() - target).pow(2), w);
  return vl.loss * (w > 0).to(vl.loss.dtype());
}

}  // namespace rlf

// Preference losses; see preference_loss.h and docs/algorithms.md.
#include "algorithms/preference_loss.h"

#include <cmath>

#include <torch/torch.h>

#include "algorithms/names.h"
#include "util/error.h"

namespace rlf::algo {

namespace {

constexpr detail::NameTable<PreferenceLoss, 5> kNames{{
    {PreferenceLoss::Sigmoid, "sigmoid"},
    {PreferenceLoss::Ipo, "ipo"},
    {PreferenceLoss::Hinge, "hinge"},
    {PreferenceLoss::Simpo, "simpo"},
    {PreferenceLoss::Sppo, "sppo"},
}};

void check_pair_shapes(const PairLogps& p, bool need_ref) {
  check(p.chosen.defined() && p.rejected.defined() && p.chosen.dim() == 1 && p.rejected.sizes() == p.chosen.sizes(),
        "preference loss: chosen and rejected log-prob sums must be [P] alike");
  if (need_ref)
    check(p.ref_chosen.defined() && p.ref_rejected.defined() && p.ref_chosen.sizes() == p.chosen.sizes() &&
              p.ref_rejected.sizes() == p.chosen.sizes(),
          "preference loss: the reference log-prob sums must be [P] like the policy's");
  else
    check(p.chosen_len.defined() && p.rejected_len.defined() && p.chosen_len.sizes() == p.chosen.sizes() &&
              p.rejected_len.sizes() == p.chosen.sizes(),
          "preference loss: simpo needs the response lengths [P]");
}

// -(1 - eps) log sigma(h) - eps log sigma(-h)
torch::Tensor smoothed_logistic(const torch::Tensor& h, double eps) {
  auto l = -torch::log_sigmoid(h) * (1.0 - eps);
  if (eps > 0) l = l - torch::log_sigmoid(-h) * eps;
  return l;
}

}  // namespace

PreferenceLoss parse_preference_loss(std::string_view name) {
  return detail::parse_name(kNames, "preference loss", name);
}
std::vector<std::string> preference_loss_names() { return detail::names_list(kNames); }

std::string_view preference_loss_name(PreferenceLoss loss) { return detail::name_of(kNames, loss); }

void PreferenceLossOptions::validate() const {
  check(std::isfinite(beta) && beta > 0, "preference.beta must be > 0 (got ", beta,
        "; DPO's paper uses 0.1, SimPO's 2 to 10)");
  check(std::isfinite(label_smoothing) && label_smoothing >= 0 && label_smoothing < 0.5,
        "preference.label_smoothing must be in [0, 0.5) (got ", label_smoothing, ")");
  check(label_smoothing == 0 || loss == PreferenceLoss::Sigmoid || loss == PreferenceLoss::Simpo,
        "preference.label_smoothing applies to the sigmoid and simpo losses only (got loss = \"",
        preference_loss_name(loss), "\"); set it to 0");
  check(std::isfinite(simpo_gamma) && simpo_gamma >= 0, "preference.simpo_gamma must be >= 0 (got ", simpo_gamma, ")");
}

torch::Tensor pairwise_preference_loss(const PairLogps& p, const PreferenceLossOptions& o) {
  o.validate();
  check(o.loss != PreferenceLoss::Sppo, "pairwise_preference_loss: sppo is a per-sequence loss (use sppo_loss)");
  check_pair_shapes(p, !o.reference_free());
  if (o.loss == PreferenceLoss::Simpo) {
    const auto h = (p.chosen / p.chosen_len.to(p.chosen.dtype()) - p.rejected / p.rejected_len.to(p.chosen.dtype())) *
                       o.beta -
                   o.simpo_gamma;
    return smoothed_logistic(h, o.label_smoothing);
  }
  const auto logits = (p.chosen - p.ref_chosen.detach()) - (p.rejected - p.ref_rejected.detach());
  switch (o.loss) {
    case PreferenceLoss::Sigmoid:
      return smoothed_logistic(logits * o.beta, o.label_smoothing);
    case PreferenceLoss::Ipo:
      return (logits - 1.0 / (2.0 * o.beta)).pow(2);
    case PreferenceLoss::Hinge:
      return torch::relu(1.0 - logits * o.beta);
    default:
      fail("pairwise_preference_loss: unhandled loss");
  }
}

std::pair<torch::Tensor, torch::Tensor> implicit_rewards(const PairLogps& p, const PreferenceLossOptions& o) {
  check_pair_shapes(p, !o.reference_free());
  torch::NoGradGuard ng;
  if (o.reference_free())
    return {p.chosen.detach() / p.chosen_len.to(p.chosen.dtype()) * o.beta,
            p.rejected.detach() / p.rejected_len.to(p.chosen.dtype()) * o.beta};
  return {(p.chosen.detach() - p.ref_chosen) * o.beta, (p.rejected.detach() - p.ref_rejected) * o.beta};
}

torch::Tensor sppo_loss(const torch::Tensor& logratio, const torch::Tensor& win_rate, double beta) {
  check(std::isfinite(beta) && beta > 0, "preference.beta must be > 0 (got ", beta, ")");
  check(logratio.dim() == 1 && win_rate.sizes() == logratio.sizes(), "sppo_loss: logratio and win_rate must be [N] alike");
  return (logratio - (win_rate.detach().to(logratio.dtype()) - 0.5) / beta).pow(2);
}

torch::Tensor group_win_rates(const torch::Tensor& rewards, const torch::Tensor& groups) {
  check(rewards.dim() == 1 && groups.sizes() == rewards.sizes(), "group_win_rates: rewards and groups must be [N] alike");
  const auto r = rewards.detach().to(torch::kFloat64).cpu().contiguous();
  const auto g = groups.to(torch::kInt64).cpu().contiguous();
  const int64_t n = r.numel();
  const double* rv = r.data_ptr<double>();
  const int64_t* gv = g.data_ptr<int64_t>();
  auto out = torch::empty({n}, torch::kFloat64);
  double* ov = out.data_ptr<double>();
  for (int64_t i = 0; i < n; ++i) {
    double wins = 0;
    int64_t others = 0;
    for (int64_t j = 0; j < n; ++j) {
      if (j == i || gv[j] != gv[i]) continue;
      ++others;
      wins += rv[i] > rv[j] ? 1.0 : rv[i] == rv[j] ? 0.5 : 0.0;
    }
    ov[i] = others ? wins / static_cast<double>(others) : 0.5;
  }
  return out.to(rewards.device());
}

}  // namespace rlf::algo

// Preference losses (DPO sigmoid with label smoothing, IPO, hinge, SimPO,
// SPPO) and group win rates: values against numbers worked out by hand from
// the papers' definitions, gradients against central finite differences in
// float64, option errors naming the key.
#include <gtest/gtest.h>

#include <cmath>

#include <torch/torch.h>

#include "algorithms/preference_loss.h"
#include "tests/support/tensors.h"
#include "tests/support/test_env.h"

namespace rlf::algo {
namespace {

using test::kF64;

torch::Tensor vec(std::vector<double> v) { return torch::tensor(v, kF64); }

// One pair: pi_c = -10, pi_r = -12, ref_c = ref_r = -11, lengths 5 and 6.
// Log-ratio margin (pi_c - ref_c) - (pi_r - ref_r) = 1 - (-1) = 2.
PairLogps one_pair() {
  PairLogps p;
  p.chosen = vec({-10});
  p.rejected = vec({-12});
  p.ref_chosen = vec({-11});
  p.ref_rejected = vec({-11});
  p.chosen_len = vec({5});
  p.rejected_len = vec({6});
  return p;
}

double softplus(double x) { return std::log1p(std::exp(x)); }  // -log sigma(-x)

PreferenceLossOptions opts(PreferenceLoss loss, double beta, double eps = 0, double gamma = 0.5) {
  PreferenceLossOptions o;
  o.loss = loss;
  o.beta = beta;
  o.label_smoothing = eps;
  o.simpo_gamma = gamma;
  return o;
}

TEST(PreferenceLoss, ValuesByHand) {
  const PairLogps p = one_pair();
  // sigmoid: h = 0.1 * 2 = 0.2, L = -log sigma(0.2) = softplus(-0.2).
  EXPECT_NEAR(pairwise_preference_loss(p, opts(PreferenceLoss::Sigmoid, 0.1)).item<double>(), softplus(-0.2), 1e-12);
  // cDPO, eps = 0.1: 0.9 softplus(-0.2) + 0.1 softplus(0.2).
  EXPECT_NEAR(pairwise_preference_loss(p, opts(PreferenceLoss::Sigmoid, 0.1, 0.1)).item<double>(),
              0.9 * softplus(-0.2) + 0.1 * softplus(0.2), 1e-12);
  // ipo: (2 - 1/(2*0.1))^2 = (2 - 5)^2 = 9.
  EXPECT_NEAR(pairwise_preference_loss(p, opts(PreferenceLoss::Ipo, 0.1)).item<double>(), 9.0, 1e-12);
  // hinge: max(0, 1 - 0.2) = 0.8; with beta = 1: max(0, 1 - 2) = 0.
  EXPECT_NEAR(pairwise_preference_loss(p, opts(PreferenceLoss::Hinge, 0.1)).item<double>(), 0.8, 1e-12);
  EXPECT_EQ(pairwise_preference_loss(p, opts(PreferenceLoss::Hinge, 1.0)).item<double>(), 0.0);
  // simpo, beta 2, gamma 0.5: h = 2 * (-10/5 - (-12/6)) - 0.5 = -0.5, L = softplus(0.5).
  EXPECT_NEAR(pairwise_preference_loss(p, opts(PreferenceLoss::Simpo, 2.0)).item<double>(), softplus(0.5), 1e-12);
  // simpo ignores the reference entirely.
  PairLogps no_ref = p;
  no_ref.ref_chosen = torch::Tensor();
  no_ref.ref_rejected = torch::Tensor();
  EXPECT_NEAR(pairwise_preference_loss(no_ref, opts(PreferenceLoss::Simpo, 2.0)).item<double>(), softplus(0.5), 1e-12);
}

TEST(PreferenceLoss, ImplicitRewards) {
  const PairLogps p = one_pair();
  auto [c, r] = implicit_rewards(p, opts(PreferenceLoss::Sigmoid, 0.1));
  EXPECT_NEAR(c.item<double>(), 0.1, 1e-12);   // 0.1 * (-10 - -11)
  EXPECT_NEAR(r.item<double>(), -0.1, 1e-12);  // 0.1 * (-12 - -11)
  auto [cs, rs] = implicit_rewards(p, opts(PreferenceLoss::Simpo, 2.0));
  EXPECT_NEAR(cs.item<double>(), -4.0, 1e-12);  // 2 * -10/5
  EXPECT_NEAR(rs.item<double>(), -4.0, 1e-12);  // 2 * -12/6
}

// d L / d (pi_c, pi_r) for every pairwise loss against finite differences,
// on several pairs at once (one of them inside the hinge's flat region).
TEST(PreferenceLoss, GradientsMatchFiniteDifferences) {
  const auto chosen0 = vec({-10, -3, -20}), rejected0 = vec({-12, -2, -19});
  for (auto o : {opts(PreferenceLoss::Sigmoid, 0.1), opts(PreferenceLoss::Sigmoid, 0.5, 0.2), opts(PreferenceLoss::Ipo, 0.3),
                 opts(PreferenceLoss::Hinge, 0.4), opts(PreferenceLoss::Simpo, 2.0, 0.1, 0.7)}) {
    SCOPED_TRACE(std::string(preference_loss_name(o.loss)));
    auto f = [&](const torch::Tensor& c, const torch::Tensor& r) {
      PairLogps p;
      p.chosen = c;
      p.rejected = r;
      p.ref_chosen = vec({-11, -2.5, -18});
      p.ref_rejected = vec({-11, -2.5, -21});
      p.chosen_len = vec({5, 2, 9});
      p.rejected_len = vec({6, 3, 8});
      return pairwise_preference_loss(p, o).sum();
    };
    auto c = chosen0.clone().requires_grad_(true), r = rejected0.clone().requires_grad_(true);
    f(c, r).backward();
    const double h = 1e-6;
    for (int64_t i = 0; i < 3; ++i) {
      for (int side = 0; side < 2; ++side) {
        auto cp = chosen0.clone(), cm = chosen0.clone(), rp = rejected0.clone(), rm = rejected0.clone();
        (side == 0 ? cp : rp)[i] += h;
        (side == 0 ? cm : rm)[i] -= h;
        const double fd = (f(cp, rp).item<double>() - f(cm, rm).item<double>()) / (2 * h);
        const double ad = (side == 0 ? c : r).grad()[i].item<double>();
        EXPECT_NEAR(ad, fd, 1e-6 * std::max(1.0, std::abs(fd))) << "pair " << i << (side == 0 ? " chosen" : " rejected");
      }
    }
  }
}

// DPO's gradient in closed form: dL/dpi_c = -beta sigma(-h), dL/dpi_r = +beta sigma(-h).
TEST(PreferenceLoss, DpoGradientClosedForm) {
  PairLogps p = one_pair();
  p.chosen = p.chosen.clone().requires_grad_(true);
  p.rejected = p.rejected.clone().requires_grad_(true);
  pairwise_preference_loss(p, opts(PreferenceLoss::Sigmoid, 0.1)).sum().backward();
  const double s = 1.0 / (1.0 + std::exp(0.2));  // sigma(-0.2)
  EXPECT_NEAR(p.chosen.grad().item<double>(), -0.1 * s, 1e-12);
  EXPECT_NEAR(p.rejected.grad().item<double>(), 0.1 * s, 1e-12);
  // The reference sums are constants.
  PairLogps q = one_pair();
  q.ref_chosen = q.ref_chosen.clone().requires_grad_(true);
  q.chosen = q.chosen.clone().requires_grad_(true);
  pairwise_preference_loss(q, opts(PreferenceLoss::Sigmoid, 0.1)).sum().backward();
  EXPECT_FALSE(q.ref_chosen.grad().defined());
}

TEST(PreferenceLoss, WinRatesWithinGroups) {
  const auto w = group_win_rates(vec({1, 0, 0.5, 3, 3, 7}), torch::tensor({0, 0, 0, 1, 1, 2}, torch::kInt64));
  const std::vector<double> want{1.0, 0.0, 0.5, 0.5, 0.5, 0.5};
  for (int64_t i = 0; i < 6; ++i) EXPECT_DOUBLE_EQ(w[i].item<double>(), want[i]) << i;
}

// SPPO on a pair (win rates 1 and 0) is TRL's sppo_hard:
// (a - 0.5/beta)^2 + (b + 0.5/beta)^2 with a, b the log-ratios of chosen and rejected.
TEST(PreferenceLoss, SppoOnAPairIsTheHardVariant) {
  const double beta = 0.25, a = 0.3, b = -1.1;
  const auto l = sppo_loss(vec({a, b}), vec({1, 0}), beta);
  EXPECT_NEAR(l.sum().item<double>(), std::pow(a - 0.5 / beta, 2) + std::pow(b + 0.5 / beta, 2), 1e-12);
  auto x = vec({a, b}).requires_grad_(true);
  sppo_loss(x, vec({1, 0}), beta).sum().backward();
  EXPECT_NEAR(x.grad()[0].item<double>(), 2 * (a - 2.0), 1e-12);
  EXPECT_NEAR(x.grad()[1].item<double>(), 2 * (b + 2.0), 1e-12);
}

TEST(PreferenceLoss, OptionErrorsNameTheKey) {
  EXPECT_NE(test::error_of([] { opts(PreferenceLoss::Sigmoid, 0).validate(); }).find("preference.beta"), std::string::npos);
  EXPECT_NE(test::error_of([] { opts(PreferenceLoss::Sigmoid, 0.1, 0.5).validate(); }).find("preference.label_smoothing"),
            std::string::npos);
  EXPECT_NE(test::error_of([] { opts(PreferenceLoss::Ipo, 0.1, 0.1).validate(); }).find("sigmoid and simpo"),
            std::string::npos);
  EXPECT_NE(test::error_of([] { opts(PreferenceLoss::Simpo, 1, 0, -1).validate(); }).find("preference.simpo_gamma"),
            std::string::npos);
  EXPECT_NE(test::error_of([] { parse_preference_loss("dpo"); }).find("sigmoid, ipo, hinge, simpo, sppo"),
            std::string::npos);
  EXPECT_NE(test::error_of([] { pairwise_preference_loss(one_pair(), opts(PreferenceLoss::Sppo, 0.1)); }).find("per-sequence"),
            std::string::npos);
}

}  // namespace
}  // namespace rlf::algo

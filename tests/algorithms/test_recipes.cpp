// The recipes' objectives (issue "Recipes from the research"): CISPO, DPPO's
// binary-TV and binary-KL trust regions, Clip-Cov, KL-Cov, NFT, truncated
// importance sampling with sequence masking against the rollout's log-probs,
// and SEED-GRPO's semantic-entropy scale — values and gradients against
// hand-computed numbers, gradients against central finite differences of
// the surrogate whose gradient each objective is, and masked tokens that
// carry nothing.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <vector>

#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

#include "algorithms/loss_aggregation.h"
#include "algorithms/nft_loss.h"
#include "algorithms/policy_loss.h"
#include "algorithms/rollout_correction.h"
#include "algorithms/semantic_entropy.h"
#include "tests/support/gradcheck.h"
#include "tests/support/tensors.h"
#include "tests/support/test_env.h"
#include "util/error.h"

namespace rlf::algo {
namespace {

using test::kF64;
using test::kNaN;
using test::mat;

// d(sum of per-token loss)/d logp by autograd, flattened.
std::vector<double> grad_of(const std::function<torch::Tensor(const torch::Tensor&)>& per_token, const torch::Tensor& x0) {
  auto x = x0.detach().clone().requires_grad_(true);
  per_token(x).sum().backward();
  const auto g = x.grad().contiguous().view(-1);
  return std::vector<double>(g.data_ptr<double>(), g.data_ptr<double>() + g.numel());
}

using test::expect_grad_is_fd_of;

// Old log-prob -1 everywhere (p_old = e^-1); logp = -1 + log(ratio).
struct Case {
  torch::Tensor old_logp, logp, adv, mask;
  Case(std::vector<double> ratios, std::vector<double> a, std::vector<double> m = {}) {
    const auto n = static_cast<int64_t>(ratios.size());
    old_logp = torch::full({1, n}, -1.0, kF64);
    std::vector<double> lp;
    for (double r : ratios) lp.push_back(-1.0 + std::log(r));
    logp = mat(1, n, lp);
    adv = mat(1, n, a);
    mask = m.empty() ? torch::ones({1, n}, kF64) : mat(1, n, m);
  }
};

PolicyLossOptions with(PolicyObjective o, double eps_low, double eps_high) {
  PolicyLossOptions opt;
  opt.objective = o;
  opt.eps_low = eps_low;
  opt.eps_high = eps_high;
  return opt;
}

TEST(Recipes, ObjectiveNamesRoundTripAndErrorsNameTheKey) {
  for (auto o : {PolicyObjective::Clip, PolicyObjective::Cispo, PolicyObjective::DppoTv, PolicyObjective::DppoKl,
                 PolicyObjective::ClipCov, PolicyObjective::KlCov})
    EXPECT_EQ(parse_policy_objective(policy_objective_name(o)), o);
  EXPECT_NE(test::error_of([] { parse_policy_objective("ppo2"); }).find("algorithm.policy_loss"), std::string::npos);
  auto o = with(PolicyObjective::DppoTv, 0.2, 0.2);
  o.ratio_level = RatioLevel::Sequence;
  EXPECT_NE(test::error_of([&] { o.validate(); }).find("algorithm.ratio_level"), std::string::npos);
  o = with(PolicyObjective::ClipCov, 0.2, 0.2);
  o.clip_cov_low = 5;
  o.clip_cov_high = 1;
  EXPECT_NE(test::error_of([&] { o.validate(); }).find("algorithm.clip_cov_low"), std::string::npos);
  o = with(PolicyObjective::KlCov, 0.2, 0.2);
  o.kl_cov_fraction = 0;
  EXPECT_NE(test::error_of([&] { o.validate(); }).find("algorithm.kl_cov_fraction"), std::string::npos);
}

// CISPO, eps_low 0.2, eps_high 0.28: weight sg(clip(r, 0.8, 1.28)),
//   ratio  A    weight  d loss / d logp = -A w
//   1.1   +1    1.1     -1.1
//   1.5   +2    1.28    -2.56   (PPO: 0 — clipped)
//   0.5   +1    0.8     -0.8
//   0.5   -1    0.8     +0.8    (PPO: 0 — clipped)
//   masked token holding NaN: 0.
TEST(Recipes, CispoKeepsAGradientOnClippedTokens) {
  Case c({1.1, 1.5, 0.5, 0.5, 1.0}, {1, 2, 1, -1, kNaN}, {1, 1, 1, 1, 0});
  const auto o = with(PolicyObjective::Cispo, 0.2, 0.28);
  const auto f = [&](const torch::Tensor& x) { return policy_loss(x, c.old_logp, c.adv, c.mask, o).per_token; };
  const auto g = grad_of(f, c.logp);
  const std::vector<double> want = {-1.1, -2.56, -0.8, 0.8, 0.0};
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(g[i], want[i], 1e-12) << i;
  const auto r = policy_loss(c.logp, c.old_logp, c.adv, c.mask, o);
  EXPECT_NEAR(r.per_token[0][1].item<double>(), -2 * 1.28 * (-1 + std::log(1.5)), 1e-12);  // -A w log pi
  EXPECT_EQ(r.per_token[0][4].item<double>(), 0.0);
  // The gradient of the surrogate -A * (r inside the clip range, else its bound times log pi).
  const auto sur = [&](const torch::Tensor& x) {
    const auto ratio = (x - c.old_logp).exp();
    const auto in = (ratio >= 0.8) & (ratio <= 1.28);
    const auto w0 = (c.logp - c.old_logp).exp().clamp(0.8, 1.28);
    return torch::where(c.mask != 0, torch::where(in, -torch::nan_to_num(c.adv) * ratio, -torch::nan_to_num(c.adv) * w0 * x), torch::zeros({}, kF64));
  };
  expect_grad_is_fd_of(f, sur, c.logp);
}

// DPPO binary TV, delta_low = delta_high = 0.15, p_old = e^-1 = 0.3679:
//   ratio  A    p - p_old   region            d loss / d logp = -A min(r, C)
//   1.1   +1   +0.0368     inside            -1.1
//   1.5   +2   +0.1839     outside (A > 0)    0
//   0.5   +1   -0.1839     inside (A > 0)    -0.5
//   0.5   -1   -0.1839     outside (A < 0)    0
//   1.5   -1   +0.1839     inside (A < 0)    +1.2 with C = 1.2
TEST(Recipes, DppoTvMasksTokensOutsideTheTrustRegion) {
  Case c({1.1, 1.5, 0.5, 0.5, 1.5}, {1, 2, 1, -1, -1});
  auto o = with(PolicyObjective::DppoTv, 0.15, 0.15);
  o.dppo_ratio_cap = 1.2;
  const auto f = [&](const torch::Tensor& x) { return policy_loss(x, c.old_logp, c.adv, c.mask, o).per_token; };
  const auto g = grad_of(f, c.logp);
  const std::vector<double> want = {-1.1, 0, -0.5, 0, 1.2};
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(g[i], want[i], 1e-12) << i;
  const auto r = policy_loss(c.logp, c.old_logp, c.adv, c.mask, o);
  EXPECT_NEAR(r.stats.region_frac, 2.0 / 5.0, 1e-12);
  // Below the cap the gradient is that of the surrogate -A r on the tokens inside.
  o.dppo_ratio_cap = 20;
  const std::vector<double> in = {1, 0, 1, 0, 1};
  const auto sur = [&](const torch::Tensor& x) { return -c.adv * (x - c.old_logp).exp() * mat(1, 5, in); };
  expect_grad_is_fd_of(f, sur, c.logp);
}

// DPPO binary KL(p_old || p) = p_old log(p_old/p) + (1-p_old) log((1-p_old)/(1-p)), delta 0.1:
//   ratio 1.5 (p 0.5518): 0.0682 -> inside for A > 0;  ratio 2.5 (p 0.9197): 0.967 -> outside for A > 0
//   ratio 0.5 (p 0.1839): 0.0935 -> inside for A < 0;  ratio 0.3 (p 0.1104): 0.2269 -> outside for A < 0
//   ratio 2.5 with A < 0: moving up is always allowed for A < 0 -> inside
TEST(Recipes, DppoKlUsesTheBinaryKlOfTheSampledToken) {
  const auto bkl = [](double r) {
    const double po = std::exp(-1.0), p = po * r;
    return po * std::log(po / p) + (1 - po) * std::log((1 - po) / (1 - p));
  };
  EXPECT_NEAR(bkl(1.5), 0.0682, 1e-4);
  EXPECT_NEAR(bkl(2.5), 0.9672, 1e-4);
  EXPECT_NEAR(bkl(0.5), 0.0935, 1e-4);
  EXPECT_NEAR(bkl(0.3), 0.2269, 1e-4);
  Case c({1.5, 2.5, 0.5, 0.3, 2.5}, {1, 1, -1, -1, -1});
  const auto o = with(PolicyObjective::DppoKl, 0.1, 0.1);
  const auto f = [&](const torch::Tensor& x) { return policy_loss(x, c.old_logp, c.adv, c.mask, o).per_token; };
  const auto g = grad_of(f, c.logp);
  const std::vector<double> want = {-1.5, 0, 0.5, 0, 2.5};
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(g[i], want[i], 1e-12) << i;
}

// Clip-Cov on one row: A = (3, -1, -1, -1) (mean 0), log pi = (-0.5, -1.5, -1.5, -2.5) (mean -1.5),
// covariances (3, 0, 0, 1): only token 0 lies in (1, 5); a quarter of 4 tokens = 1 token is detached.
TEST(Recipes, ClipCovDetachesTheChosenHighCovarianceTokens) {
  auto old = mat(1, 4, {-0.5, -1.5, -1.5, -2.5});
  auto adv = mat(1, 4, {3, -1, -1, -1});
  auto mask = torch::ones({1, 4}, kF64);
  auto o = with(PolicyObjective::ClipCov, 0.2, 0.2);
  o.clip_cov_fraction = 0.25;
  const auto f = [&](const torch::Tensor& x) { return policy_loss(x, old, adv, mask, o).per_token; };
  const auto g = grad_of(f, old);
  const std::vector<double> want = {0, 1, 1, 1};  // token 0 detached; the rest -A r with r = 1
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(g[i], want[i], 1e-12) << i;
  const auto r = policy_loss(old, old, adv, mask, o);
  EXPECT_EQ(r.per_token[0][0].item<double>(), 0.0);
  EXPECT_NEAR(r.stats.cov_frac, 0.25, 1e-12);
  // The surrogate: PPO's clipped objective on the kept tokens (FD at a point inside the clip range).
  const auto sur = [&](const torch::Tensor& x) {
    return -adv * (x - old).exp() * mat(1, 4, {0, 1, 1, 1});
  };
  expect_grad_is_fd_of(f, sur, old + 0.01);
}

// With many eligible tokens exactly floor(fraction * n) are detached, all of
// them eligible, the same ones on every call with the same data (resume-exact)
// and others for other data.
TEST(Recipes, ClipCovChoiceIsSeededByTheData) {
  const int64_t n = 400;
  auto gen = at::make_generator<at::CPUGeneratorImpl>(7);
  auto old = -torch::rand({2, n}, gen, kF64) * 3;
  auto adv = torch::randn({2, n}, gen, kF64) * 3;
  auto mask = torch::ones({2, n}, kF64);
  auto o = with(PolicyObjective::ClipCov, 0.2, 0.2);
  o.clip_cov_fraction = 0.05;
  o.clip_cov_low = 0.0;
  o.clip_cov_high = 100.0;
  const auto zeroed = [&](const torch::Tensor& old_logp) {
    const auto r = policy_loss(old_logp, old_logp, adv, mask, o);
    return (r.per_token == 0) & (adv != 0);
  };
  const auto a = zeroed(old), b = zeroed(old);
  EXPECT_EQ(a.sum().item<int64_t>(), 40);  // floor(0.05 * 800)
  EXPECT_TRUE(torch::equal(a, b));
  // Every chosen token had a covariance in (0, 100).
  const auto lp = old, am = adv.mean(), lm = lp.mean();
  const auto cov = (adv - am) * (lp - lm);
  EXPECT_TRUE((cov.masked_select(a) > 0).all().item<bool>());
  EXPECT_FALSE(torch::equal(a, zeroed(old - 0.001)));
}

// KL-Cov on the Clip-Cov row: token 0 has the largest covariance; its loss
// adds |log pi - log pi_old|: at log pi = log pi_old + 0.1 its gradient is
// -A r + coef = -3 e^0.1 + 1; the others -A r (no clipping).
TEST(Recipes, KlCovPenalisesTheLargestCovarianceTokens) {
  auto old = mat(1, 4, {-0.5, -1.5, -1.5, -2.5});
  auto adv = mat(1, 4, {3, -1, -1, -1});
  auto mask = torch::ones({1, 4}, kF64);
  auto o = with(PolicyObjective::KlCov, 0.2, 0.2);
  o.kl_cov_fraction = 0.25;
  o.kl_cov_coef = 1.0;
  const auto x0 = old + mat(1, 4, {0.1, 0.5, -0.5, 0.0});  // ratios far outside the clip range: no clipping
  const auto f = [&](const torch::Tensor& x) { return policy_loss(x, old, adv, mask, o).per_token; };
  const auto g = grad_of(f, x0);
  EXPECT_NEAR(g[0], -3 * std::exp(0.1) + 1, 1e-12);
  EXPECT_NEAR(g[1], std::exp(0.5), 1e-12);
  EXPECT_NEAR(g[2], std::exp(-0.5), 1e-12);
  const auto sur = [&](const torch::Tensor& x) {
    return -adv * (x - old).exp() + mat(1, 4, {1, 0, 0, 0}) * (x - old).abs();
  };
  expect_grad_is_fd_of(f, sur, x0);
  EXPECT_NEAR(policy_loss(x0, old, adv, mask, o).stats.cov_frac, 0.25, 1e-12);
}

// NFT with r_q = 0.25:
//   correct, r 1.2:    loss 0.75 * -log 1.2 = -0.136737,  d/dlogp = -0.75
//   incorrect, r 0.8:  proxy (1 - 0.2)/0.75 = 1.0667 > 1: loss 0.75 * -log 1.0667 = -0.048404,
//                      d/dlogp = 0.75 * (1/proxy) * (r_q r / (1 - r_q)) = 0.1875
//   incorrect, r 1.2:  proxy 0.9333 < eps = 1: loss 0 (value clamped), d/dlogp = 0.75 * 1 * (0.3/0.75) = 0.3
//   on-policy (r 1):   -(1 - r_q) on correct, +r_q on incorrect: Dr.GRPO's r - r_q
//   rate 0, 1 or NaN:  nothing
TEST(Recipes, NftHandValuesGradientsAndTheOnPolicyEquivalence) {
  const auto old = torch::full({7, 1}, -1.0, kF64);
  const auto logp = old + mat(7, 1, {std::log(1.2), std::log(0.8), std::log(1.2), 0, 0, 0, 0});
  const auto correct = torch::tensor(std::vector<double>{1, 0, 0, 1, 0, 1, 0}, kF64);
  const auto rate = torch::tensor(std::vector<double>{0.25, 0.25, 0.25, 0.25, 0.25, 1.0, kNaN}, kF64);
  const auto mask = torch::ones({7, 1}, kF64);
  const auto f = [&](const torch::Tensor& x) { return nft_loss(x, old, correct, rate, mask).per_token; };
  const auto r = nft_loss(logp, old, correct, rate, mask);
  EXPECT_NEAR(r.per_token[0][0].item<double>(), -0.75 * std::log(1.2), 1e-12);
  EXPECT_NEAR(r.per_token[1][0].item<double>(), -0.75 * std::log(0.8 / 0.75), 1e-12);
  EXPECT_NEAR(r.per_token[2][0].item<double>(), 0.0, 1e-12);
  const auto g = grad_of(f, logp);
  const std::vector<double> want = {-0.75, 0.75 * (0.75 / 0.8) * (0.25 * 0.8 / 0.75), 0.3, -0.75, 0.25, 0, 0};
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(g[i], want[i], 1e-12) << i;
  EXPECT_NEAR(r.stats.clamped_frac, 1.0 / 5.0, 1e-12);  // 5 rows with a usable rate
  // Where the clamp is not active the gradient is that of the value.
  const auto keep = mat(7, 1, {1, 1, 0, 1, 0, 1, 1});  // rows 2 and 4: clamped, or at the kink proxy = eps
  expect_grad_is_fd_of([&](const torch::Tensor& x) { return f(x) * keep; },
                       [&](const torch::Tensor& x) { return f(x) * keep; }, logp);
  NftOptions bad;
  bad.clamp_negative = 0;
  EXPECT_NE(test::error_of([&] { bad.validate(); }).find("algorithm.nft_clamp_negative"), std::string::npos);
}

// TIS with cap 2 and the sequence band [0.5, 1.2]:
//   row 0: ratios pi_old/mu = (1.5, 3, 0.5) -> w (1.5, 2, 0.5); geometric mean 2.25^(1/3) = 1.31 > 1.2: masked
//   row 1: ratios (1, 1.1), masked token with NaN -> w (1, 1.1, 0); geometric mean 1.049: kept
TEST(Recipes, RolloutCorrectionTruncatesAndMasksSequences) {
  const auto old = mat(2, 3, {std::log(1.5), std::log(3.0), std::log(0.5), 0, std::log(1.1), kNaN});
  const auto mu = torch::zeros({2, 3}, kF64);
  const auto mask = mat(2, 3, {1, 1, 1, 1, 1, 0});
  RolloutCorrectionOptions o;
  o.tis_cap = 2;
  const auto a = rollout_correction(old, mu, mask, o);
  const std::vector<double> want_a = {1.5, 2, 0.5, 1, 1.1, 0};
  for (int64_t i = 0; i < 6; ++i) EXPECT_NEAR(a.weight.view(-1)[i].item<double>(), want_a[i], 1e-6) << i;
  EXPECT_NEAR(a.stats.capped_frac, 1.0 / 5.0, 1e-12);
  EXPECT_FALSE(a.weight.requires_grad());
  // k3 of KL(mu || pi_old) per token: (r - 1) - log r.
  double k3 = 0;
  for (double r : {1.5, 3.0, 0.5, 1.0, 1.1}) k3 += (r - 1) - std::log(r);
  EXPECT_NEAR(a.stats.kl, k3 / 5, 1e-12);
  o.mask_low = 0.5;
  o.mask_high = 1.2;
  const auto b = rollout_correction(old, mu, mask, o);
  const std::vector<double> want_b = {0, 0, 0, 1, 1.1, 0};
  for (int64_t i = 0; i < 6; ++i) EXPECT_NEAR(b.weight.view(-1)[i].item<double>(), want_b[i], 1e-6) << i;
  EXPECT_NEAR(b.stats.masked_seq_frac, 0.5, 1e-12);
  // Without TIS the weight is 1 on kept loss tokens.
  o.tis_cap = 0;
  const auto c = rollout_correction(old, mu, mask, o);
  EXPECT_NEAR(c.weight[1][1].item<double>(), 1.0, 1e-12);
  o.mask_high = 0.9;
  EXPECT_NE(test::error_of([&] { rollout_correction(old, mu, mask, o); }).find("algorithm.mismatch_mask_high"),
            std::string::npos);
}

TEST(Recipes, SemanticEntropyAndSeedScale) {
  const std::vector<int> agree = {0, 0, 0, 0}, two = {0, 0, 1, 1}, none = {kNoCluster, kNoCluster, 0, 0},
                         distinct = {0, 1, 2, 3};
  EXPECT_NEAR(semantic_entropy(agree), 0.0, 1e-15);
  EXPECT_NEAR(semantic_entropy(two), std::log(2.0), 1e-12);
  EXPECT_NEAR(semantic_entropy(none), 1.5 * std::log(2.0), 1e-12);
  EXPECT_NEAR(semantic_entropy(distinct), std::log(4.0), 1e-12);
  EXPECT_NEAR(seed_scale(std::log(2.0), 4, 0.5), 0.75, 1e-12);
  EXPECT_NEAR(seed_scale(std::log(4.0), 4, 1.0), 0.0, 1e-12);
  EXPECT_EQ(seed_scale(0.0, 1, 1.0), 1.0);
  EXPECT_NE(test::error_of([] { seed_scale(0.1, 4, 1.5); }).find("algorithm.seed_alpha"), std::string::npos);
}

}  // namespace
}  // namespace rlf::algo

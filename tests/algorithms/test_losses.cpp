// Policy loss, loss aggregation, KL estimators and entropy: values against
// hand-computed numbers, gradients against analytic values and central
// finite differences in float64, zero gradient on masked tokens, and the
// micro-batch / full-batch equivalence of the step-global normalisers.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <vector>

#include <torch/types.h>
#include <torch/utils.h>

#include "algorithms/entropy.h"
#include "algorithms/kl.h"
#include "algorithms/loss_aggregation.h"
#include "algorithms/policy_loss.h"
#include "algorithms/policy_shaping.h"
#include "tests/support/gradcheck.h"
#include "tests/support/tensors.h"
#include "tests/support/test_env.h"
#include "util/error.h"

namespace rlf::algo {
namespace {

using test::kF64;
using test::kInf;
using test::kNaN;
using test::mat;

using test::expect_grad_matches_fd;

void expect_tensor_near(const torch::Tensor& got, const torch::Tensor& want, double tol = 1e-12) {
  ASSERT_EQ(got.sizes(), want.sizes());
  const auto g = got.detach().to(torch::kFloat64).contiguous().view(-1);
  const auto w = want.to(torch::kFloat64).contiguous().view(-1);
  for (int64_t i = 0; i < g.numel(); ++i) {
    EXPECT_NEAR(g[i].item<double>(), w[i].item<double>(), tol) << "element " << i;
  }
}

// ---------------------------------------------------------------- policy loss

// Token-level table, eps_low 0.2, eps_high 0.28 (clip range [0.8, 1.28]):
//   ratio  A    loss = -min(rA, clip(r)A)     d loss / d logp
//   1.1   +1   -1.1    inside                  -1.1
//   1.5   +2   -2.56   clipped high            0
//   0.5   +1   -0.5    below, A>0: unclipped   -0.5
//   0.5   -1    0.8    clipped low             0
//   1.5   -1    1.5    above, A<0: unclipped   1.5
//   4.0   -1    4.0    (dual c=3: 3, grad 0)   4.0
// and two masked tokens holding garbage.
struct TokenCase {
  torch::Tensor old_logp = mat(2, 4, {-1, -1, -1, -1, -1, -1, kNaN, -2});
  torch::Tensor logp = old_logp.clone();
  torch::Tensor adv = mat(2, 4, {1, 2, 1, -1, -1, -1, kNaN, 5});
  torch::Tensor mask = mat(2, 4, {1, 1, 1, 1, 1, 1, 0, 0});
  TokenCase() {
    const std::vector<double> ratios = {1.1, 1.5, 0.5, 0.5, 1.5, 4.0};
    for (int i = 0; i < 6; ++i) logp.view(-1)[i] = -1.0 + std::log(ratios[i]);
    logp[1][2] = -kInf;
    logp[1][3] = 30.0;  // exp(30 - -2) would overflow float32 if it were used
  }
  PolicyLossOptions options() const {
    PolicyLossOptions o;
    o.eps_low = 0.2;
    o.eps_high = 0.28;
    return o;
  }
};

// Policy shaping (LUFFY / Critique-GRPO): loss -A * p/(p + gamma), gradient
// w.r.t. logp -A * gamma * p / (p + gamma)^2, nothing where the mask is 0.
TEST(PolicyShaping, ValuesAndGradientsByHand) {
  const double gamma = 0.1;
  auto logp = mat(2, 3, {std::log(0.5), std::log(0.01), std::log(0.9), std::log(0.2), 0.0, 1e30}).requires_grad_(true);
  const auto adv = mat(2, 3, {1.0, 1.0, -2.0, 0.5, 0.5, 0.5});
  const auto mask = mat(2, 3, {1, 1, 1, 1, 0, 0});
  auto per = shaped_policy_loss(logp, adv, mask, gamma);
  per.sum().backward();
  const double ps[] = {0.5, 0.01, 0.9, 0.2};
  const double as[] = {1.0, 1.0, -2.0, 0.5};
  for (int k = 0; k < 4; ++k) {
    const int64_t b = k / 3, t = k % 3;
    const double p = ps[k], a = as[k];
    EXPECT_NEAR(per[b][t].item<double>(), -a * p / (p + gamma), 1e-12) << k;
    EXPECT_NEAR(logp.grad()[b][t].item<double>(), -a * gamma * p / ((p + gamma) * (p + gamma)), 1e-12) << k;
  }
  // Masked tokens: exactly 0, even where logp holds garbage (1e30).
  EXPECT_EQ(per[1][1].item<double>(), 0.0);
  EXPECT_EQ(per[1][2].item<double>(), 0.0);
  EXPECT_EQ(logp.grad()[1][1].item<double>(), 0.0);
  EXPECT_EQ(logp.grad()[1][2].item<double>(), 0.0);
  // A rare token keeps a gradient the plain -A * p objective would nearly lose (p = 0.01: 8.3x).
  EXPECT_GT(std::abs(logp.grad()[0][1].item<double>()), 8 * 0.01);
  // Per-sequence advantages broadcast.
  auto per_seq = shaped_policy_loss(logp.detach(), mat(2, 1, {1.0, 0.5}).squeeze(1), mask, gamma);
  EXPECT_NEAR(per_seq[0][0].item<double>(), -0.5 / 0.6, 1e-12);
  EXPECT_EQ(test::error_of([&] { shaped_policy_loss(logp, adv, mask, 0.0); }),
            "refine.gamma must be > 0 (got 0; Critique-GRPO uses 0.1)");
}

// refine.objective = "likelihood": -A * log p, gradient -A at every probability (hand values); masked
// positions exactly 0 even where logp is -inf; off_policy_loss dispatches on the objective.
TEST(PolicyShaping, LikelihoodObjectiveKeepsTheGradientOfRareTokens) {
  auto logp = mat(2, 3, {std::log(0.5), std::log(1e-4), std::log(0.9), std::log(0.2), -INFINITY, 1e30})
                  .requires_grad_(true);
  const auto adv = mat(2, 3, {1.0, 2.0, -2.0, 0.5, 0.5, 0.5});
  const auto mask = mat(2, 3, {1, 1, 1, 1, 0, 0});
  auto per = likelihood_policy_loss(logp, adv, mask);
  per.sum().backward();
  EXPECT_NEAR(per[0][0].item<double>(), -1.0 * std::log(0.5), 1e-12);
  EXPECT_NEAR(per[0][1].item<double>(), -2.0 * std::log(1e-4), 1e-9);  // 18.42
  EXPECT_NEAR(per[0][2].item<double>(), 2.0 * std::log(0.9), 1e-12);
  EXPECT_NEAR(per[1][0].item<double>(), -0.5 * std::log(0.2), 1e-12);
  EXPECT_NEAR(logp.grad()[0][1].item<double>(), -2.0, 1e-12);  // shaped at gamma 0.1: about -2e-3
  EXPECT_NEAR(logp.grad()[0][2].item<double>(), 2.0, 1e-12);
  EXPECT_EQ(per[1][1].item<double>(), 0.0);
  EXPECT_EQ(per[1][2].item<double>(), 0.0);
  EXPECT_EQ(logp.grad()[1][1].item<double>(), 0.0);
  EXPECT_EQ(logp.grad()[1][2].item<double>(), 0.0);
  const auto finite = logp.detach().clamp(-20.0, 0.0);
  expect_tensor_near(off_policy_loss(finite, adv, mask, {OffPolicyObjective::Likelihood, 0.1}),
                     likelihood_policy_loss(finite, adv, mask));
  expect_tensor_near(off_policy_loss(finite, adv, mask, {OffPolicyObjective::Shaped, 0.1}),
                     shaped_policy_loss(finite, adv, mask, 0.1));
}

TEST(PolicyLoss, TokenLevelValuesStatsAndGradients) {
  TokenCase c;
  auto logp = c.logp.clone().requires_grad_(true);
  const auto out = policy_loss(logp, c.old_logp, c.adv, c.mask, c.options());
  expect_tensor_near(out.per_token, mat(2, 4, {-1.1, -2.56, -0.5, 0.8, 1.5, 4.0, 0, 0}));
  out.per_token.sum().backward();
  expect_tensor_near(logp.grad(), mat(2, 4, {-1.1, 0, -0.5, 0, 1.5, 4.0, 0, 0}));
  EXPECT_EQ(out.stats.n_tokens, 6);
  EXPECT_NEAR(out.stats.clip_frac_low, 1.0 / 6, 1e-12);
  EXPECT_NEAR(out.stats.clip_frac_high, 1.0 / 6, 1e-12);
  EXPECT_EQ(out.stats.clip_frac_dual, 0.0);
  EXPECT_NEAR(out.stats.ratio_mean, 9.1 / 6, 1e-12);
  EXPECT_NEAR(out.stats.ratio_max, 4.0, 1e-12);
  double kl = 0;
  for (double r : {1.1, 1.5, 0.5, 0.5, 1.5, 4.0}) kl += (r - 1) - std::log(r);
  EXPECT_NEAR(out.stats.approx_kl, kl / 6, 1e-12);
}

TEST(PolicyLoss, DualClipCapsNegativeAdvantageLoss) {
  TokenCase c;
  auto o = c.options();
  o.dual_clip = 3.0;
  auto logp = c.logp.clone().requires_grad_(true);
  const auto out = policy_loss(logp, c.old_logp, c.adv, c.mask, o);
  // ratio 4 with A = -1: min(4, 3 * |A|) = 3, gradient cut; ratio 1.5 stays below c.
  expect_tensor_near(out.per_token, mat(2, 4, {-1.1, -2.56, -0.5, 0.8, 1.5, 3.0, 0, 0}));
  out.per_token.sum().backward();
  expect_tensor_near(logp.grad(), mat(2, 4, {-1.1, 0, -0.5, 0, 1.5, 0, 0, 0}));
  EXPECT_NEAR(out.stats.clip_frac_dual, 1.0 / 6, 1e-12);
}

TEST(PolicyLoss, OffPolicySafeguardsActOnGuardedTokensOnly) {
  TokenCase c;
  const auto guard_row1 = mat(2, 4, {0, 0, 0, 0, 1, 1, 1, 1});
  // Truncation at 2: the guarded ratio 4 (A = -1) becomes 2 -> loss -min(-2, -1.28) = 2, no gradient;
  // the unguarded ratio 2 of row 0 keeps its PPO clip.
  auto o = c.options();
  o.ratio_cap = 2.0;
  auto logp = c.logp.clone().requires_grad_(true);
  auto out = policy_loss(logp, c.old_logp, c.adv, c.mask, o, guard_row1);
  expect_tensor_near(out.per_token, mat(2, 4, {-1.1, -2.56, -0.5, 0.8, 1.5, 2.0, 0, 0}));
  out.per_token.sum().backward();
  expect_tensor_near(logp.grad(), mat(2, 4, {-1.1, 0, -0.5, 0, 1.5, 0, 0, 0}));
  EXPECT_NEAR(out.stats.capped_frac, 1.0 / 6, 1e-12);
  // A band [0.6, 3]: the guarded ratio 4 is masked (loss 0, no gradient).
  o = c.options();
  o.mask_low = 0.6;
  o.mask_high = 3.0;
  logp = c.logp.clone().requires_grad_(true);
  out = policy_loss(logp, c.old_logp, c.adv, c.mask, o, guard_row1);
  expect_tensor_near(out.per_token, mat(2, 4, {-1.1, -2.56, -0.5, 0.8, 1.5, 0, 0, 0}));
  out.per_token.sum().backward();
  expect_tensor_near(logp.grad(), mat(2, 4, {-1.1, 0, -0.5, 0, 1.5, 0, 0, 0}));
  EXPECT_NEAR(out.stats.masked_frac, 1.0 / 6, 1e-12);
  // Guarding row 0 instead: its two ratios 0.5 fall below the band.
  out = policy_loss(c.logp, c.old_logp, c.adv, c.mask, o, mat(2, 4, {1, 1, 1, 1, 0, 0, 0, 0}));
  expect_tensor_near(out.per_token, mat(2, 4, {-1.1, -2.56, 0, 0, 1.5, 4.0, 0, 0}));
  EXPECT_NEAR(out.stats.masked_frac, 2.0 / 6, 1e-12);
  // Without a guard tensor nothing changes.
  out = policy_loss(c.logp, c.old_logp, c.adv, c.mask, o);
  expect_tensor_near(out.per_token, mat(2, 4, {-1.1, -2.56, -0.5, 0.8, 1.5, 4.0, 0, 0}));
}

TEST(PolicyLoss, AdvantagesPerSequenceBroadcast) {
  TokenCase c;
  const auto adv_b = torch::tensor({1.0, -1.0}, kF64);
  const auto per_seq = policy_loss(c.logp, c.old_logp, adv_b, c.mask, c.options());
  const auto per_tok = policy_loss(c.logp, c.old_logp, adv_b.unsqueeze(1).expand({2, 4}), c.mask, c.options());
  expect_tensor_near(per_seq.per_token, per_tok.per_token, 0.0);
}

// GSPO: row 0 has three tokens with ratios 1.1, 1.5, 0.5 -> s0 = 0.825^(1/3);
// row 1 has two tokens with ratios 1.5, 4 -> s1 = sqrt(6).
struct SeqCase {
  torch::Tensor old_logp = mat(2, 4, {-1, -1, -1, kNaN, -2, -2, -2, -2});
  torch::Tensor logp = old_logp.clone();
  torch::Tensor mask = mat(2, 4, {1, 1, 1, 0, 1, 1, 0, 0});
  SeqCase() {
    logp[0][0] = -1 + std::log(1.1);
    logp[0][1] = -1 + std::log(1.5);
    logp[0][2] = -1 + std::log(0.5);
    logp[0][3] = -kInf;
    logp[1][0] = -2 + std::log(1.5);
    logp[1][1] = -2 + std::log(4.0);
    logp[1][2] = 50;
  }
  static PolicyLossOptions options(double eps_low, double eps_high) {
    PolicyLossOptions o;
    o.ratio_level = RatioLevel::Sequence;
    o.eps_low = eps_low;
    o.eps_high = eps_high;
    return o;
  }
};
const double kS0 = std::cbrt(0.825);
const double kS1 = std::sqrt(6.0);

TEST(PolicyLoss, SequenceLevelValuesAndGradient) {
  SeqCase c;
  auto logp = c.logp.clone().requires_grad_(true);
  const auto adv = torch::tensor({1.0, -1.0}, kF64);
  const auto out = policy_loss(logp, c.old_logp, adv, c.mask, SeqCase::options(0.2, 0.28));
  // A=+1, s0 = 0.938 inside [0.8, 1.28]: -s0.  A=-1, s1 = 2.449 above the range: unclipped, s1.
  expect_tensor_near(out.per_token, mat(2, 4, {-kS0, -kS0, -kS0, 0, kS1, kS1, 0, 0}));
  // GSPO-token gradient of each token's own term: -A * s_i * d logp_t.
  out.per_token.sum().backward();
  expect_tensor_near(logp.grad(), mat(2, 4, {-kS0, -kS0, -kS0, 0, kS1, kS1, 0, 0}));
  EXPECT_NEAR(out.stats.ratio_mean, (3 * kS0 + 2 * kS1) / 5, 1e-12);
  EXPECT_EQ(out.stats.clip_frac_low + out.stats.clip_frac_high, 0.0);
}

TEST(PolicyLoss, SequenceLevelClipping) {
  SeqCase c;
  auto logp = c.logp.clone().requires_grad_(true);
  const auto adv = torch::tensor({-1.0, 1.0}, kF64);
  // Range [0.95, 1.05]: s0 = 0.938 with A<0 -> clipped low (0.95); s1 with A>0 -> clipped high (-1.05).
  const auto out = policy_loss(logp, c.old_logp, adv, c.mask, SeqCase::options(0.05, 0.05));
  expect_tensor_near(out.per_token, mat(2, 4, {0.95, 0.95, 0.95, 0, -1.05, -1.05, 0, 0}));
  out.per_token.sum().backward();
  expect_tensor_near(logp.grad(), torch::zeros({2, 4}, kF64));
  EXPECT_NEAR(out.stats.clip_frac_low, 3.0 / 5, 1e-12);
  EXPECT_NEAR(out.stats.clip_frac_high, 2.0 / 5, 1e-12);
}

// Finite differences need finite inputs at every coordinate, masked ones
// included: replace the garbage with ordinary values (the mask still applies).
torch::Tensor finite(const torch::Tensor& t) { return torch::nan_to_num(t, 0.0, 0.0, 0.0); }

// The full trainer composition for finite differences: policy loss -> aggregation.
torch::Tensor aggregated_policy_loss(const torch::Tensor& logp, const torch::Tensor& old_logp,
                                     const torch::Tensor& adv, const torch::Tensor& mask,
                                     const PolicyLossOptions& o, LossAggregation mode) {
  AggregationOptions a;
  a.mode = mode;
  a.max_tokens = 4;
  return aggregate_loss(policy_loss(logp, old_logp, adv, mask, o).per_token, mask, count_loss_totals(mask), a);
}

TEST(PolicyLossGradcheck, ClippedSurrogateBothSidesActiveAndInactive) {
  TokenCase c;
  for (auto mode : {LossAggregation::TokenMean, LossAggregation::SeqMeanTokenMean,
                    LossAggregation::SeqMeanTokenSumNorm}) {
    // Clipping active on both sides (table above) ...
    expect_grad_matches_fd(
        [&](const torch::Tensor& x) {
          return aggregated_policy_loss(x, finite(c.old_logp), finite(c.adv), c.mask, c.options(), mode);
        },
        finite(c.logp));
    // ... and inactive everywhere (range [0.1, 6]).
    PolicyLossOptions wide;
    wide.eps_low = 0.9;
    wide.eps_high = 5.0;
    expect_grad_matches_fd(
        [&](const torch::Tensor& x) {
          return aggregated_policy_loss(x, finite(c.old_logp), finite(c.adv), c.mask, wide, mode);
        },
        finite(c.logp));
  }
}

TEST(PolicyLossGradcheck, DualClipActiveAndInactive) {
  TokenCase c;
  for (double dual : {3.0, 5.0}) {
    auto o = c.options();
    o.dual_clip = dual;
    expect_grad_matches_fd(
        [&](const torch::Tensor& x) {
          return aggregated_policy_loss(x, finite(c.old_logp), finite(c.adv), c.mask, o,
                                        LossAggregation::TokenMean);
        },
        finite(c.logp));
  }
}

TEST(PolicyLossGradcheck, SequenceLevelMatchesTheSequenceObjective) {
  // With one advantage per sequence the GSPO-token gradient is the exact
  // gradient of the GSPO objective, for any aggregation that weighs the
  // tokens of a sequence equally.
  SeqCase c;
  for (auto adv : {torch::tensor({1.0, -1.0}, kF64), torch::tensor({-1.0, 1.0}, kF64)}) {
    for (auto mode : {LossAggregation::SeqMeanTokenMean, LossAggregation::TokenMean}) {
      for (double eps : {0.05, 0.2}) {
        expect_grad_matches_fd(
            [&](const torch::Tensor& x) {
              return aggregated_policy_loss(x, finite(c.old_logp), adv, c.mask, SeqCase::options(eps, eps), mode);
            },
            finite(c.logp));
      }
    }
  }
}

TEST(PolicyLoss, MaskedTokensGetZeroGradientWhateverTheyHold) {
  for (auto level : {RatioLevel::Token, RatioLevel::Sequence}) {
    TokenCase c;  // masked tokens: logp -inf / 30, old_logp NaN / -2, advantages NaN / 5
    auto o = c.options();
    o.ratio_level = level;
    o.dual_clip = 3.0;
    auto logp = c.logp.clone().requires_grad_(true);
    const auto ref = mat(2, 4, {-1, -1, -1, -1, -1, -1, kNaN, kInf});
    const auto pl = policy_loss(logp, c.old_logp, c.adv, c.mask, o);
    const auto kl = kl_estimate(logp, ref, c.mask, KlEstimator::K3) + kl_estimate(logp, ref, c.mask, KlEstimator::K2);
    for (auto mode : {LossAggregation::TokenMean, LossAggregation::SeqMeanTokenMean,
                      LossAggregation::SeqMeanTokenSumNorm}) {
      AggregationOptions a;
      a.mode = mode;
      a.max_tokens = 4;
      const auto loss = aggregate_loss(pl.per_token + 0.1 * kl, c.mask, count_loss_totals(c.mask), a);
      ASSERT_TRUE(std::isfinite(loss.item<double>())) << ratio_level_name(level);
      logp.mutable_grad() = torch::Tensor();
      loss.backward({}, /*retain_graph=*/true);
      const auto g = logp.grad();
      EXPECT_EQ(g[1][2].item<double>(), 0.0) << ratio_level_name(level) << " " << loss_aggregation_name(mode);
      EXPECT_EQ(g[1][3].item<double>(), 0.0) << ratio_level_name(level) << " " << loss_aggregation_name(mode);
      EXPECT_TRUE(torch::isfinite(g).all().item<bool>());
      EXPECT_NE(g[0][0].item<double>(), 0.0);
    }
  }
}

TEST(PolicyLoss, OptionErrorsNameTheField) {
  TokenCase c;
  const auto expect_error = [&](PolicyLossOptions o, const char* text) {
    try {
      policy_loss(c.logp, c.old_logp, c.adv, c.mask, o);
      ADD_FAILURE() << "no throw for " << text;
    } catch (const Error& e) {
      EXPECT_STREQ(e.what(), text);
    }
  };
  PolicyLossOptions o;
  o.eps_low = 1.0;
  expect_error(o, "algorithm.eps_low must be in [0, 1), got 1 (PPO/GRPO use 0.2)");
  o = {};
  o.eps_high = -0.1;
  expect_error(o, "algorithm.eps_high must be >= 0, got -0.1 (PPO/GRPO use 0.2, DAPO clip-higher 0.28)");
  o = {};
  o.dual_clip = 0.5;
  expect_error(o, "algorithm.dual_clip must be 0 (off) or > 1, got 0.5 (verl uses 3)");
  try {
    policy_loss(c.logp, c.old_logp.narrow(1, 0, 3), c.adv, c.mask);
    ADD_FAILURE() << "no throw";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "policy_loss: old_logp has shape [2, 3] but logp has [2, 4]; they must match");
  }
  try {
    policy_loss(c.logp, c.old_logp, torch::zeros({3}, kF64), c.mask);
    ADD_FAILURE() << "no throw";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "policy_loss: advantages [B] has 3 entries but logp has B = 2");
  }
  EXPECT_EQ(parse_ratio_level("sequence"), RatioLevel::Sequence);
  try {
    parse_ratio_level("seq");
    ADD_FAILURE() << "no throw";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "unknown ratio level 'seq'; expected one of: token, sequence");
  }
}

// ---------------------------------------------------------------- aggregation

// per_token rows: {1,2,3,-} (3 tokens) and {4,-,-,-} (1 token).
const torch::Tensor kPerToken = mat(2, 4, {1, 2, 3, 99, 4, kNaN, kInf, 7});
const torch::Tensor kMask = mat(2, 4, {1, 1, 1, 0, 1, 0, 0, 0});

torch::Tensor agg(const torch::Tensor& x, const torch::Tensor& mask, LossAggregation mode, LossTotals totals,
                  int64_t max_tokens = 4) {
  AggregationOptions a;
  a.mode = mode;
  a.max_tokens = max_tokens;
  return aggregate_loss(x, mask, totals, a);
}

TEST(Aggregation, HandValues) {
  const auto t = count_loss_totals(kMask);
  EXPECT_EQ(t.n_tokens, 4);
  EXPECT_EQ(t.n_sequences, 2);
  EXPECT_NEAR(agg(kPerToken, kMask, LossAggregation::TokenMean, t).item<double>(), 10.0 / 4, 1e-12);
  EXPECT_NEAR(agg(kPerToken, kMask, LossAggregation::SeqMeanTokenMean, t).item<double>(), (6.0 / 3 + 4.0) / 2,
              1e-12);
  EXPECT_NEAR(agg(kPerToken, kMask, LossAggregation::SeqMeanTokenSumNorm, t).item<double>(),
              (6.0 / 4 + 4.0 / 4) / 2, 1e-12);
  // Totals of a larger step (this is one of several micro-batches).
  LossTotals step{8, 5};
  EXPECT_NEAR(agg(kPerToken, kMask, LossAggregation::TokenMean, step).item<double>(), 10.0 / 8, 1e-12);
  EXPECT_NEAR(agg(kPerToken, kMask, LossAggregation::SeqMeanTokenMean, step).item<double>(), 6.0 / 5, 1e-12);
  EXPECT_NEAR(agg(kPerToken, kMask, LossAggregation::SeqMeanTokenSumNorm, step, 10).item<double>(),
              (0.6 + 0.4) / 5, 1e-12);
}

TEST(Aggregation, WeightedMask) {
  const auto w = mat(2, 4, {1, 0.5, 1, 0, 2, 0, 0, 0});
  const auto t = count_loss_totals(w);
  EXPECT_EQ(t.n_tokens, 4.5);
  EXPECT_NEAR(agg(kPerToken, w, LossAggregation::TokenMean, t).item<double>(), (1 + 1 + 3 + 8) / 4.5, 1e-12);
  EXPECT_NEAR(agg(kPerToken, w, LossAggregation::SeqMeanTokenMean, t).item<double>(), (5.0 / 2.5 + 8.0 / 2) / 2,
              1e-12);
}

TEST(AggregationGradcheck, EachMode) {
  const auto x0 = finite(torch::where(kMask != 0, kPerToken, torch::full({}, 0.3, kF64)));
  for (auto mode : {LossAggregation::TokenMean, LossAggregation::SeqMeanTokenMean,
                    LossAggregation::SeqMeanTokenSumNorm}) {
    // Square the per-token values so the gradient depends on the point.
    expect_grad_matches_fd(
        [&](const torch::Tensor& x) { return agg(x * x, kMask, mode, count_loss_totals(kMask)); }, x0);
  }
}

TEST(Aggregation, TwoMicroBatchesEqualTheConcatenatedBatch) {
  // Four sequences of 3, 1, 5 and 2 tokens; micro-batches {0,1} (4 tokens) and {2,3} (7 tokens).
  const auto mask = mat(4, 5, {1, 1, 1, 0, 0,  //
                               1, 0, 0, 0, 0,  //
                               1, 1, 1, 1, 1,  //
                               1, 1, 0, 0, 0});
  torch::manual_seed(7);
  const auto x0 = torch::randn({4, 5}, kF64);
  for (auto mode : {LossAggregation::TokenMean, LossAggregation::SeqMeanTokenMean,
                    LossAggregation::SeqMeanTokenSumNorm}) {
    auto full_x = x0.clone().requires_grad_(true);
    const auto full = agg(full_x * full_x, mask, mode, count_loss_totals(mask), 5);
    full.backward();

    auto x = x0.clone().requires_grad_(true);
    const auto m1 = mask.narrow(0, 0, 2), m2 = mask.narrow(0, 2, 2);
    LossTotals step = count_loss_totals(m1);
    step += count_loss_totals(m2);
    EXPECT_EQ(step.n_tokens, 11);
    EXPECT_EQ(step.n_sequences, 4);
    const auto x1 = x.narrow(0, 0, 2), x2 = x.narrow(0, 2, 2);
    const auto l1 = agg(x1 * x1, m1, mode, step, 5);
    l1.backward();  // gradient accumulation: one backward per micro-batch
    const auto l2 = agg(x2 * x2, m2, mode, step, 5);
    l2.backward();
    EXPECT_NEAR(l1.item<double>() + l2.item<double>(), full.item<double>(), 1e-12) << loss_aggregation_name(mode);
    expect_tensor_near(x.grad(), full_x.grad());
  }
  // The local token mean of each micro-batch averaged would differ (4 vs 7 tokens):
  const auto sq = x0 * x0;
  const double local = (agg(sq.narrow(0, 0, 2), mask.narrow(0, 0, 2), LossAggregation::TokenMean,
                            count_loss_totals(mask.narrow(0, 0, 2))).item<double>() +
                        agg(sq.narrow(0, 2, 2), mask.narrow(0, 2, 2), LossAggregation::TokenMean,
                            count_loss_totals(mask.narrow(0, 2, 2))).item<double>()) / 2;
  EXPECT_GT(std::abs(local - agg(sq, mask, LossAggregation::TokenMean, count_loss_totals(mask)).item<double>()),
            1e-3);
}

TEST(Aggregation, EmptyMicroBatchAndErrors) {
  auto x = torch::ones({2, 3}, kF64).requires_grad_(true);
  const auto none = torch::zeros({2, 3}, kF64);
  const auto zero = agg(x, none, LossAggregation::TokenMean, LossTotals{});
  EXPECT_EQ(zero.item<double>(), 0.0);
  zero.backward();
  EXPECT_EQ(x.grad().abs().sum().item<double>(), 0.0);
  try {
    agg(kPerToken, kMask, LossAggregation::TokenMean, LossTotals{});
    FAIL() << "no throw";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(),
                 "aggregate_loss: this micro-batch has n_tokens=4 n_sequences=2 but the step totals are "
                 "n_tokens=0 n_sequences=0; add count_loss_totals(mask) of every micro-batch of the step to the "
                 "totals");
  }
  try {
    agg(kPerToken, kMask, LossAggregation::SeqMeanTokenSumNorm, count_loss_totals(kMask), 0);
    FAIL() << "no throw";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(),
                 "AggregationOptions: max_tokens must be > 0 for seq_mean_token_sum_norm, got 0; set it to the "
                 "generation's maximum completion length");
  }
  EXPECT_EQ(parse_loss_aggregation("seq_mean_token_sum_norm"), LossAggregation::SeqMeanTokenSumNorm);
  try {
    parse_loss_aggregation("token-mean");
    FAIL() << "no throw";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(),
                 "unknown loss aggregation 'token-mean'; expected one of: token_mean, seq_mean_token_mean, "
                 "seq_mean_token_sum_norm");
  }
}

// ---------------------------------------------------------------- KL

TEST(Kl, HandValuesAndGradients) {
  // d = ref - logp = [ln 0.5, ln 2]; the third token is masked.
  const auto logp0 = mat(1, 3, {std::log(0.5), std::log(0.25), kNaN});
  const auto ref = mat(1, 3, {std::log(0.25), std::log(0.5), 0.0});
  const auto mask = mat(1, 3, {1, 1, 0});
  const double l2 = std::log(2.0);
  struct Want {
    KlEstimator k;
    std::vector<double> value, grad;  // grad = d k / d logp
  };
  const std::vector<Want> wants = {
      {KlEstimator::K1, {l2, -l2, 0}, {1, 1, 0}},
      {KlEstimator::K2, {0.5 * l2 * l2, 0.5 * l2 * l2, 0}, {l2, -l2, 0}},  // -d
      {KlEstimator::K3, {0.5 + l2 - 1, 2 - l2 - 1, 0}, {0.5, -1, 0}},      // 1 - exp(d)
  };
  for (const auto& w : wants) {
    auto logp = logp0.clone().requires_grad_(true);
    const auto k = kl_estimate(logp, ref, mask, w.k);
    expect_tensor_near(k, mat(1, 3, w.value));
    k.sum().backward();
    expect_tensor_near(logp.grad(), mat(1, 3, w.grad));
    const auto penalty = kl_reward_penalty(logp, ref, mask, w.k, 0.1);
    EXPECT_FALSE(penalty.requires_grad());
    expect_tensor_near(penalty, mat(1, 3, w.value) * -0.1);
  }
}

TEST(KlGradcheck, EachEstimator) {
  torch::manual_seed(3);
  const auto logp0 = torch::randn({2, 3}, kF64) - 1.0;
  const auto ref = torch::randn({2, 3}, kF64) - 1.0;
  const auto mask = mat(2, 3, {1, 1, 0, 1, 1, 1});
  for (auto k : {KlEstimator::K1, KlEstimator::K2, KlEstimator::K3}) {
    expect_grad_matches_fd(
        [&](const torch::Tensor& x) {
          return aggregate_loss(kl_estimate(x, ref, mask, k), mask, count_loss_totals(mask));
        },
        logp0);
  }
}

TEST(Kl, K1AndK3AreUnbiasedEstimatesOfTheTrueKl) {
  // pi_theta and pi_ref over 4 tokens; 200k samples from pi_theta.
  const auto p = torch::tensor({0.1, 0.2, 0.3, 0.4}, kF64);
  const auto q = torch::tensor({0.25, 0.25, 0.25, 0.25}, kF64);
  const double kl = (p * (p.log() - q.log())).sum().item<double>();  // KL(p || q) = 0.1064
  torch::manual_seed(11);
  const int64_t n = 200000;
  const auto idx = torch::multinomial(p, n, /*replacement=*/true);
  const auto logp = p.log().index_select(0, idx).view({1, n});
  const auto ref = q.log().index_select(0, idx).view({1, n});
  const auto mask = torch::ones({1, n}, kF64);
  for (auto k : {KlEstimator::K1, KlEstimator::K3}) {
    const auto est = kl_estimate(logp, ref, mask, k);
    const double mean = est.mean().item<double>();
    const double sem = est.std().item<double>() / std::sqrt(static_cast<double>(n));
    EXPECT_NEAR(mean, kl, 4 * sem) << kl_estimator_name(k);  // 4 standard errors
  }
  EXPECT_EQ(parse_kl_estimator("k3"), KlEstimator::K3);
  try {
    parse_kl_estimator("low_var_kl");
    FAIL() << "no throw";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "unknown KL estimator 'low_var_kl'; expected one of: k1, k2, k3");
  }
}

// ---------------------------------------------------------------- entropy

TEST(Entropy, HandValues) {
  const double ninf = -kInf;
  // [1, 3, 4]: uniform -> ln 4; one-hot with -inf logits -> 0; p = (1/4, 3/4, 0, 0).
  const auto logits = torch::tensor({0.0, 0.0, 0.0, 0.0,  //
                                     5.0, ninf, ninf, ninf,  //
                                     0.0, std::log(3.0), ninf, ninf},
                                    kF64)
                          .view({1, 3, 4});
  const double h3 = -(0.25 * std::log(0.25) + 0.75 * std::log(0.75));
  for (int64_t chunk : {0, 1, 2, 1024}) {
    auto x = logits.clone().requires_grad_(true);
    const auto h = entropy_from_logits(x, chunk);
    expect_tensor_near(h, mat(1, 3, {std::log(4.0), 0.0, h3}));
    h.sum().backward();
    EXPECT_TRUE(torch::isfinite(x.grad()).all().item<bool>()) << "chunk " << chunk;
    // Uniform is the maximum: zero gradient there.
    EXPECT_NEAR(x.grad()[0][0].abs().sum().item<double>(), 0.0, 1e-14);
  }
}

TEST(Entropy, MatchesDirectFormulaAndKeepsDtypes) {
  torch::manual_seed(5);
  const auto logits = torch::randn({2, 5, 7}, kF64) * 3;
  const auto logp = torch::log_softmax(logits, -1);
  const auto direct = -(logp.exp() * logp).sum(-1);
  expect_tensor_near(entropy_from_logits(logits, 3), direct);
  const auto h16 = entropy_from_logits(logits.to(torch::kBFloat16), 4);
  EXPECT_EQ(h16.scalar_type(), torch::kFloat32);
  expect_tensor_near(h16, direct, 0.05);
  try {
    entropy_from_logits(logits.view({10, 7}));
    FAIL() << "no throw";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "entropy_from_logits: logits must be [B, T, V], got [10, 7]");
  }
}

TEST(SelfCertainty, IsTheKlFromUniformAveragedOverMaskedPositions) {
  // V = 2. Position 0: p = (1/4, 3/4) -> KL(U || p) = 1/2 ln 2 + 1/2 ln(2/3);
  // position 1: uniform -> 0; position 2 masked out (anything).
  auto logits = torch::tensor({{{0.0, std::log(3.0)}, {5.0, 5.0}, {100.0, -100.0}},
                               {{1.0, 1.0}, {0.0, 0.0}, {0.0, 0.0}}},
                              torch::kFloat64);
  auto mask = torch::tensor({{1.0, 1.0, 0.0}, {0.0, 0.0, 0.0}}, torch::kFloat64);
  auto sc = self_certainty(logits, mask);
  const double kl0 = 0.5 * std::log(2.0) + 0.5 * std::log(2.0 / 3.0);
  EXPECT_NEAR(sc[0].item<double>(), kl0 / 2, 1e-12);
  EXPECT_TRUE(std::isnan(sc[1].item<double>())) << "no counted position";
  // V = 3, one position, fp32 logits: the direct formula -log V - mean log p.
  auto l3 = torch::tensor({{{0.3f, -1.2f, 2.0f}}});
  auto lp = torch::log_softmax(l3.to(torch::kFloat64), 2);
  EXPECT_NEAR(self_certainty(l3, torch::ones({1, 1}))[0].item<double>(),
              (-lp.mean(2) - std::log(3.0)).item<double>(), 1e-12);
  EXPECT_GT(self_certainty(l3, torch::ones({1, 1}))[0].item<double>(), 0.0);
}

TEST(EntropyGradcheck, ChunkedAndWhole) {
  torch::manual_seed(9);
  const auto logits0 = torch::randn({2, 3, 5}, kF64) * 2;
  const auto weights = torch::randn({2, 3}, kF64);  // a non-uniform upstream gradient
  for (int64_t chunk : {0, 2, 4}) {
    expect_grad_matches_fd(
        [&](const torch::Tensor& x) { return (entropy_from_logits(x, chunk) * weights).sum(); }, logits0);
  }
}

}  // namespace
}  // namespace rlf::algo

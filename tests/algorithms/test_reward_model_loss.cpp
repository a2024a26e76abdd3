// The reward-model math: the Bradley-Terry loss with and without a margin
// and its gradient, the symmetrised calibration error, the multi-objective
// regression loss, the gated reward, the process reward model's loss and
// step-reward bounding, and the correlations, against values worked out by hand.
#include <gtest/gtest.h>

#include <cmath>

#include <torch/torch.h>

#include "algorithms/reward_model_loss.h"
#include "tests/support/tensors.h"
#include "tests/support/test_env.h"

namespace rlf::algo {
namespace {

using test::kF64;

TEST(BradleyTerry, LossAndGradientByHand) {
  auto c = torch::tensor({2.0, 0.0, -1.0, 40.0}, kF64).requires_grad_(true);
  auto r = torch::tensor({1.0, 0.0, 3.0, -40.0}, kF64).requires_grad_(true);
  auto loss = bradley_terry_loss(c, r);
  // -log sigmoid(d) = log(1 + exp(-d)), d = 1, 0, -4, 80
  EXPECT_NEAR(loss[0].item<double>(), std::log1p(std::exp(-1.0)), 1e-12);
  EXPECT_NEAR(loss[1].item<double>(), std::log(2.0), 1e-12);
  EXPECT_NEAR(loss[2].item<double>(), std::log1p(std::exp(4.0)), 1e-12);
  EXPECT_NEAR(loss[3].item<double>(), std::exp(-80.0), 1e-40) << "no overflow or cancellation at large margins";
  loss.sum().backward();
  // dL/dc = -sigmoid(-d) = -1/(1 + e^d), dL/dr = +1/(1 + e^d)
  const double d[] = {1, 0, -4, 80};
  for (int i = 0; i < 4; ++i) {
    EXPECT_NEAR(c.grad()[i].item<double>(), -1.0 / (1.0 + std::exp(d[i])), 1e-12);
    EXPECT_NEAR(r.grad()[i].item<double>(), 1.0 / (1.0 + std::exp(d[i])), 1e-12);
  }
  // With a margin m: -log sigmoid(d - m).
  auto m = bradley_terry_loss(torch::tensor({2.0}, kF64), torch::tensor({1.0}, kF64), torch::tensor({0.5}, kF64));
  EXPECT_NEAR(m[0].item<double>(), std::log1p(std::exp(-0.5)), 1e-12);
  EXPECT_NE(test::error_of([] { bradley_terry_loss(torch::zeros({2}, kF64), torch::zeros({3}, kF64)); }).find("shape"),
            std::string::npos);
}

TEST(PairwiseCalibration, ErrorByHand) {
  // margin 0: P = 0.5 with outcome 1 and its mirror 0.5 with outcome 0, one bin: |0.5 - 0.5| = 0.
  EXPECT_NEAR(pairwise_calibration_error({0.0}), 0.0, 1e-12);
  // margin log(3): P = 0.75 (bin 7, outcome 1) and 0.25 (bin 2, outcome 0): each |1 - 0.75| = |0 - 0.25| = 0.25.
  EXPECT_NEAR(pairwise_calibration_error({std::log(3.0)}), 0.25, 1e-12);
  // Two pairs, margins log(3) and -log(3): bin 7 holds P = 0.75 twice with outcomes 1 and 0 (accuracy 0.5),
  // bin 2 likewise: ECE = |0.5 - 0.75| = 0.25.
  EXPECT_NEAR(pairwise_calibration_error({std::log(3.0), -std::log(3.0)}), 0.25, 1e-12);
  // Perfectly confident and right: P -> 1.
  EXPECT_NEAR(pairwise_calibration_error({50.0}), 0.0, 1e-12);
  EXPECT_EQ(pairwise_calibration_error({}), 0.0);
  EXPECT_NE(test::error_of([] { pairwise_calibration_error({1.0}, 0); }).find("bins"), std::string::npos);
}

TEST(RatingRegression, MeanSquaredErrorOverRatedAttributesWithNoGradientElsewhere) {
  const double nan = std::nan("");
  auto s = torch::tensor({{1.0, 2.0, 3.0}, {0.5, -1.0, 4.0}, {7.0, 7.0, 7.0}}, kF64).requires_grad_(true);
  auto y = torch::tensor({{0.0, 2.0, nan}, {nan, nan, 1.0}, {nan, nan, nan}}, kF64);
  auto loss = rating_regression_loss(s, y);
  // Row 0: ((1-0)^2 + 0) / 2; row 1: (4-1)^2 / 1; row 2 rates nothing: 0.
  EXPECT_NEAR(loss[0].item<double>(), 0.5, 1e-12);
  EXPECT_NEAR(loss[1].item<double>(), 9.0, 1e-12);
  EXPECT_EQ(loss[2].item<double>(), 0.0);
  loss.sum().backward();
  // d/ds (s - y)^2 / n = 2 (s - y) / n on rated entries, 0 elsewhere (never NaN).
  auto g = s.grad();
  EXPECT_NEAR(g[0][0].item<double>(), 1.0, 1e-12);
  EXPECT_NEAR(g[0][1].item<double>(), 0.0, 1e-12);
  EXPECT_EQ(g[0][2].item<double>(), 0.0);
  EXPECT_NEAR(g[1][2].item<double>(), 6.0, 1e-12);
  EXPECT_EQ(g[1][0].item<double>(), 0.0);
  EXPECT_FALSE(g.isnan().any().item<bool>());
  EXPECT_NE(test::error_of([] { rating_regression_loss(torch::zeros({2, 3}), torch::zeros({2, 2})); }).find("[N, K]"),
            std::string::npos);
}

TEST(GatedReward, SoftmaxWeightsTimesScoresTimesScaleByHand) {
  auto z = torch::tensor({{0.0, std::log(3.0)}, {10.0, 10.0}}, kF64);
  auto r = torch::tensor({{1.0, 5.0}, {2.0, -4.0}}, kF64);
  auto scale = torch::tensor(2.0, kF64);
  auto g = gated_reward(z, r, scale);
  // Row 0: weights (1/4, 3/4): 2 (1/4 + 15/4) = 8; row 1: (1/2, 1/2): 2 (1 - 2) = -2.
  EXPECT_NEAR(g[0].item<double>(), 8.0, 1e-12);
  EXPECT_NEAR(g[1].item<double>(), -2.0, 1e-12);
  // Temperature 2 halves the logits: weights proportional to (1, sqrt 3).
  const double w1 = std::sqrt(3.0) / (1 + std::sqrt(3.0));
  EXPECT_NEAR(gated_reward(z, r, scale, 2.0)[0].item<double>(), 2.0 * ((1 - w1) * 1.0 + w1 * 5.0), 1e-12);
  EXPECT_NE(test::error_of([&] { gated_reward(z, r, scale, 0.0); }).find("temperature"), std::string::npos);
}

TEST(ProcessRewardLoss, BinaryCrossEntropyAndItsGradientByHand) {
  auto z = torch::tensor({0.0, 2.0, -3.0, 40.0}, kF64).requires_grad_(true);
  auto y = torch::tensor({1.0, 0.0, 0.25, 1.0}, kF64);
  auto l = process_reward_loss(z, y);
  auto sig = [](double v) { return 1.0 / (1.0 + std::exp(-v)); };
  const double zs[] = {0.0, 2.0, -3.0, 40.0}, ys[] = {1.0, 0.0, 0.25, 1.0};
  for (int i = 0; i < 4; ++i) {
    const double p = sig(zs[i]);
    const double expected = i == 3 ? std::log1p(std::exp(-40.0)) : -(ys[i] * std::log(p) + (1 - ys[i]) * std::log(1 - p));
    EXPECT_NEAR(l[i].item<double>(), expected, 1e-12) << i;
  }
  l.sum().backward();
  // d/dz = sigma(z) - y.
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(z.grad()[i].item<double>(), sig(zs[i]) - ys[i], 1e-12) << i;
  EXPECT_NE(test::error_of([] { process_reward_loss(torch::zeros({2}), torch::zeros({3})); }).find("shape"),
            std::string::npos);
}

TEST(StepBounding, NoneClipAndDeltaByHand) {
  const std::vector<double> p = {0.9, 0.6, 0.2};
  EXPECT_EQ(bound_step_rewards(p, StepBounding::None), p);
  // clip (eta 0.5): min(p - 0.5, 0) = (0, 0, -0.3): never positive, so more steps never pay.
  const auto c = bound_step_rewards(p, StepBounding::Clip, 0.5);
  EXPECT_NEAR(c[0], 0.0, 1e-12);
  EXPECT_NEAR(c[1], 0.0, 1e-12);
  EXPECT_NEAR(c[2], -0.3, 1e-12);
  // delta: (0.9 - 0.6, 0.6 - 0.2, 0.2); the return from step k is p_k.
  const auto d = bound_step_rewards(p, StepBounding::Delta);
  EXPECT_NEAR(d[0], 0.3, 1e-12);
  EXPECT_NEAR(d[1], 0.4, 1e-12);
  EXPECT_NEAR(d[2], 0.2, 1e-12);
  EXPECT_NEAR(d[0] + d[1] + d[2], p[0], 1e-12);
  EXPECT_NEAR(d[1] + d[2], p[1], 1e-12);
  EXPECT_TRUE(bound_step_rewards({}, StepBounding::Delta).empty());
  EXPECT_EQ(parse_step_bounding("delta"), StepBounding::Delta);
  EXPECT_NE(test::error_of([] { parse_step_bounding("cap"); }).find("\"none\", \"clip\" or \"delta\""),
            std::string::npos);
}

TEST(Correlations, PearsonAndSpearmanByHand) {
  EXPECT_NEAR(pearson_correlation({1, 2, 3}, {2, 4, 6}), 1.0, 1e-12);
  EXPECT_NEAR(pearson_correlation({1, 2, 3}, {3, 2, 1}), -1.0, 1e-12);
  // x = (1,2,3,4), y = (1,3,2,4): centred (-1.5,-.5,.5,1.5) and (-1.5,.5,-.5,1.5): products sum to 4,
  // squares to 5 and 5: r = 4 / 5.
  EXPECT_NEAR(pearson_correlation({1, 2, 3, 4}, {1, 3, 2, 4}), 0.8, 1e-12);
  // A monotone but non-linear relation: Spearman 1, Pearson below 1.
  EXPECT_NEAR(spearman_correlation({1, 2, 3, 4}, {1, 10, 100, 1000}), 1.0, 1e-12);
  EXPECT_LT(pearson_correlation({1, 2, 3, 4}, {1, 10, 100, 1000}), 0.95);
  // Ties take their mean rank: x ranks (1.5, 1.5, 3), y ranks (1, 2, 3): r of those = sqrt(3)/2.
  EXPECT_NEAR(spearman_correlation({0, 0, 1}, {1, 2, 3}), std::sqrt(3.0) / 2.0, 1e-12);
  // Constant or too short: 0.
  EXPECT_EQ(pearson_correlation({1, 1, 1}, {1, 2, 3}), 0.0);
  EXPECT_EQ(spearman_correlation({1}, {2}), 0.0);
  EXPECT_NE(test::error_of([] { pearson_correlation({1, 2}, {1}); }).find("2 and 1"), std::string::npos);
}

}  // namespace
}  // namespace rlf::algo

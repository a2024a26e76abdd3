// The reward-model math: the Bradley-Terry loss with and without a margin
// and its gradient, and the symmetrised calibration error, against values
// worked out by hand.
#include <gtest/gtest.h>

#include <cmath>

#include <torch/torch.h>

#include "algorithms/reward_model_loss.h"
#include "tests/support/test_env.h"

namespace rlf::algo {
namespace {

const auto kF64 = torch::TensorOptions().dtype(torch::kFloat64);

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

}  // namespace
}  // namespace rlf::algo

// PPO's math (algorithms/gae.h, value_loss.h, kl_controller.h) against
// hand-computed values: GAE and its lambda = 0 / 1 limits, whitening (and
// through the BatchSum seam on two "ranks"), the clipped value loss and its
// gradient, and the adaptive KL coefficient of Ziegler et al. 2019.
#include <gtest/gtest.h>

#include <barrier>
#include <cmath>
#include <thread>

#include <torch/torch.h>

#include "algorithms/gae.h"
#include "algorithms/kl_controller.h"
#include "algorithms/value_loss.h"
#include "tests/support/test_env.h"

namespace rlf::algo {
namespace {

TEST(Gae, MatchesHandValues) {
  // delta_2 = 1 - 0.3 = 0.7; delta_1 = 0.5 + 0.9*0.3 - 0.4 = 0.37; delta_0 = 0.9*0.4 - 0.2 = 0.16
  // A_2 = 0.7; A_1 = 0.37 + 0.72*0.7 = 0.874; A_0 = 0.16 + 0.72*0.874 = 0.78928
  const std::vector<double> r = {0.0, 0.5, 1.0}, v = {0.2, 0.4, 0.3};
  const GaeResult g = gae(r, v, 0.9, 0.8);
  const double a[] = {0.78928, 0.874, 0.7};
  for (int k = 0; k < 3; ++k) {
    EXPECT_NEAR(g.advantages[k], a[k], 1e-12) << k;
    EXPECT_NEAR(g.returns[k], a[k] + v[k], 1e-12) << k;
  }
}

TEST(Gae, LambdaOneIsTheMonteCarloReturnMinusTheValueAndLambdaZeroTheTdError) {
  const std::vector<double> r = {0.0, 0.5, 1.0}, v = {0.2, 0.4, 0.3};
  const GaeResult mc = gae(r, v, 0.9, 1.0);
  const double G[] = {0.9 * 1.4, 1.4, 1.0};  // discounted returns
  for (int k = 0; k < 3; ++k) {
    EXPECT_NEAR(mc.advantages[k], G[k] - v[k], 1e-12);
    EXPECT_NEAR(mc.returns[k], G[k], 1e-12) << "lambda = 1: the value target is the return itself";
  }
  const GaeResult td = gae(r, v, 0.9, 0.0);
  const double delta[] = {0.16, 0.37, 0.7};
  for (int k = 0; k < 3; ++k) EXPECT_NEAR(td.advantages[k], delta[k], 1e-12);
  EXPECT_TRUE(gae({}, {}, 1.0, 0.95).advantages.empty());
}

TEST(Gae, BadInputsAreErrors) {
  const std::vector<double> r = {1.0}, v = {0.0, 0.0};
  EXPECT_NE(test::error_of([&] { gae(r, v, 1, 1); }).find("1 rewards for 2 values"), std::string::npos);
  const std::vector<double> one = {0.0};
  EXPECT_NE(test::error_of([&] { gae(one, one, 1, 1.5); }).find("lambda must be in [0, 1]"), std::string::npos);
  const std::vector<double> nan = {std::nan("")};
  EXPECT_NE(test::error_of([&] { gae(nan, one, 1, 1); }).find("non-finite"), std::string::npos);
}

TEST(Whiten, SelectedEntriesGetMeanZeroAndUnitVarianceOthersAreUntouched) {
  std::vector<std::vector<float>> x = {{9, 1, 2}, {3, 7, 4}};
  const std::vector<std::vector<uint8_t>> m = {{0, 1, 1}, {1, 0, 1}};
  whiten(x, m);
  // Selected: 1, 2, 3, 4 -> mean 2.5, unbiased var 5/3.
  const double s = std::sqrt(5.0 / 3.0 + 1e-8);
  EXPECT_NEAR(x[0][1], (1 - 2.5) / s, 1e-6);
  EXPECT_NEAR(x[0][2], (2 - 2.5) / s, 1e-6);
  EXPECT_NEAR(x[1][0], (3 - 2.5) / s, 1e-6);
  EXPECT_NEAR(x[1][2], (4 - 2.5) / s, 1e-6);
  EXPECT_EQ(x[0][0], 9.0f);
  EXPECT_EQ(x[1][1], 7.0f);
  // A row without a mask (an episode left out) is untouched.
  std::vector<std::vector<float>> y = {{5, 6}, {1, 3}};
  whiten(y, {{}, {1, 1}});
  EXPECT_EQ(y[0][0], 5.0f);
  EXPECT_NEAR(y[1][0], -1 / std::sqrt(2.0 + 1e-8), 1e-6);
}

TEST(Whiten, ThroughTheSeamTwoRanksGetWhatOneProcessGets) {
  std::vector<std::vector<float>> all;
  std::vector<std::vector<uint8_t>> mask;
  for (int i = 0; i < 6; ++i) {
    all.push_back({static_cast<float>(std::sin(i)), static_cast<float>(i * 0.5), static_cast<float>(std::cos(3 * i))});
    mask.push_back({1, static_cast<uint8_t>(i % 2), 1});
  }
  auto whole = all;
  whiten(whole, mask);
  std::vector<double> slots[2];
  std::barrier<> barrier(2);
  auto hook = [&](int rank) -> BatchSum {
    return [&, rank](std::span<double> v) {
      slots[rank].assign(v.begin(), v.end());
      barrier.arrive_and_wait();
      for (size_t i = 0; i < v.size(); ++i) v[i] = slots[0][i] + slots[1][i];
      barrier.arrive_and_wait();
    };
  };
  std::vector<std::vector<float>> part[2] = {{all.begin(), all.begin() + 3}, {all.begin() + 3, all.end()}};
  std::vector<std::vector<uint8_t>> pm[2] = {{mask.begin(), mask.begin() + 3}, {mask.begin() + 3, mask.end()}};
  std::thread t([&] { whiten(part[1], pm[1], hook(1)); });
  whiten(part[0], pm[0], hook(0));
  t.join();
  for (size_t i = 0; i < 6; ++i)
    for (size_t k = 0; k < 3; ++k) EXPECT_NEAR(part[i / 3][i % 3][k], whole[i][k], 1e-6) << i << "," << k;
}

TEST(ValueLoss, ClippedLossAndGradientMatchHandValues) {
  // V, V_old, R per token; eps = 0.2.
  auto v = torch::tensor({{1.0, 0.6, 1.0, 5.0}}, torch::kFloat64).requires_grad_(true);
  auto old = torch::tensor({{0.5, 0.5, 0.5, 0.0}}, torch::kFloat64);
  auto ret = torch::tensor({{2.0, 2.0, 0.0, 0.0}}, torch::kFloat64);
  auto mask = torch::tensor({{1.0, 1.0, 1.0, 0.0}}, torch::kFloat64);
  ValueLoss l = clipped_value_loss(v, old, ret, mask, 0.2);
  // token 0: plain (1-2)^2 = 1, V_clip = 0.7 -> 1.69 larger: 0.845, clipped, no gradient
  // token 1: inside the clip range: 0.5 * 1.96, gradient V - R = -1.4
  // token 2: plain 1 > (0.7 - 0)^2: 0.5, gradient V - R = 1
  // token 3: masked: 0, no gradient
  const double want[] = {0.845, 0.98, 0.5, 0.0};
  for (int t = 0; t < 4; ++t) EXPECT_NEAR(l.loss[0][t].item<double>(), want[t], 1e-12) << t;
  EXPECT_EQ(l.clipped[0][0].item<double>(), 1.0);
  EXPECT_EQ(l.clipped[0][1].item<double>(), 0.0);
  EXPECT_EQ(l.clipped[0][2].item<double>(), 0.0);
  l.loss.sum().backward();
  const double grad[] = {0.0, -1.4, 1.0, 0.0};
  for (int t = 0; t < 4; ++t) EXPECT_NEAR(v.grad()[0][t].item<double>(), grad[t], 1e-12) << t;
}

TEST(ValueLoss, ClipZeroIsTheSquaredErrorAndANegativeClipIsAnError) {
  auto v = torch::tensor({{1.0, 3.0}}, torch::kFloat64);
  auto z = torch::zeros({1, 2}, torch::kFloat64);
  auto ret = torch::tensor({{0.0, 1.0}}, torch::kFloat64);
  ValueLoss l = clipped_value_loss(v, z, ret, torch::ones({1, 2}, torch::kFloat64), 0.0);
  EXPECT_NEAR(l.loss[0][0].item<double>(), 0.5, 1e-12);
  EXPECT_NEAR(l.loss[0][1].item<double>(), 2.0, 1e-12);
  EXPECT_NE(test::error_of([&] { clipped_value_loss(v, z, ret, z, -1); }).find("value loss: clip must be >= 0"),
            std::string::npos);
}

TEST(KlController, AdaptsTheCoefficientAsZieglerEtAl) {
  KlController c({0.1, 6.0, 10000});
  EXPECT_TRUE(c.adaptive());
  c.update(9.0, 100);  // error 0.5 clipped to 0.2: beta * (1 + 0.2 * 100 / 10000)
  EXPECT_NEAR(c.beta(), 0.1 * 1.002, 1e-15);
  c.set_beta(0.1);
  c.update(3.0, 100);  // error -0.5 clipped to -0.2
  EXPECT_NEAR(c.beta(), 0.1 * 0.998, 1e-15);
  c.set_beta(0.1);
  c.update(6.6, 500);  // error 0.1
  EXPECT_NEAR(c.beta(), 0.1 * (1 + 0.1 * 0.05), 1e-15);
  KlController fixed({0.1, 0.0, 10000});
  fixed.update(100.0, 1000);
  EXPECT_EQ(fixed.beta(), 0.1) << "target 0 keeps beta fixed";
  EXPECT_NE(test::error_of([] { KlController({0.0, 6.0, 10000}); }).find("algorithm.kl_target adapts algorithm.kl_beta"),
            std::string::npos);
  EXPECT_NE(test::error_of([] { KlController({0.1, 6.0, 0}); }).find("algorithm.kl_horizon must be > 0"),
            std::string::npos);
}

}  // namespace
}  // namespace rlf::algo

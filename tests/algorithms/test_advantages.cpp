// Advantage estimators against hand-computed values (docs/algorithms.md),
// including missing rewards, singleton groups and all-missing groups.
#include <gtest/gtest.h>

#include <cmath>
#include <optional>
#include <vector>

#include "algorithms/advantages.h"
#include "util/error.h"

namespace rlf::algo {
namespace {

using Rewards = std::vector<std::optional<double>>;
constexpr double kEps = 1e-4;  // AdvantageOptions::std_eps default

// The shared example. Groups (by id, not contiguous):
//   g0: samples 0,1,2,4 with rewards 1, 0, missing, 1   -> present {1,0,1}
//   g1: sample 3, reward 0.5                           -> singleton
//   g2: samples 5,6,7 with rewards 3, 3, 2
//   g9: sample 8, missing                              -> no present reward
const Rewards kRewards = {1.0, 0.0, std::nullopt, 0.5, 1.0, 3.0, 3.0, 2.0, std::nullopt};
const std::vector<int64_t> kGroups = {0, 0, 0, 1, 0, 2, 2, 2, 9};

// g0 {1,0,1}: mean 2/3, deviations 1/3,-2/3,1/3, Bessel variance (6/9)/2 = 1/3.
// g2 {3,3,2}: mean 8/3, same deviations, same std.
const double kGroupStd = 1.0 / std::sqrt(3.0);
// Whole batch {1,0,0.5,1,3,3,2}: mean 1.5, squared deviations sum to 8.5,
// Bessel variance 8.5/6 = 17/12.
const double kBatchStd = std::sqrt(17.0 / 12.0);

std::vector<double> run(AdvantageEstimator e) {
  AdvantageOptions o;
  o.estimator = e;
  return compute_advantages(kRewards, kGroups, o);
}

void expect_near_all(const std::vector<double>& got, const std::vector<double>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-12) << "sample " << i;
}

TEST(Advantages, GrpoGroupZScoreWithBesselStdAndEps) {
  const double hi = (1.0 / 3) / (kGroupStd + kEps), lo = (-2.0 / 3) / (kGroupStd + kEps);
  expect_near_all(run(AdvantageEstimator::Grpo), {hi, lo, 0, 0, hi, hi, hi, lo, 0});
}

TEST(Advantages, GrpoPairMatchesHandValue) {
  // {0, 1}: mean 0.5, Bessel std sqrt(0.5); the eps of 1e-4 is visible at 1e-12.
  const Rewards r = {0.0, 1.0};
  const std::vector<int64_t> g = {4, 4};
  const auto a = compute_advantages(r, g);
  EXPECT_NEAR(a[0], -0.5 / (std::sqrt(0.5) + 1e-4), 1e-12);
  EXPECT_NEAR(a[1], 0.5 / (std::sqrt(0.5) + 1e-4), 1e-12);
  EXPECT_GT(std::abs(a[1] - 0.5 / std::sqrt(0.5)), 1e-5);
}

TEST(Advantages, DrGrpoOnlyCentres) {
  const double hi = 1.0 / 3, lo = -2.0 / 3;
  expect_near_all(run(AdvantageEstimator::DrGrpo), {hi, lo, 0, 0, hi, hi, hi, lo, 0});
}

TEST(Advantages, BatchStdDividesByTheWholeBatchStd) {
  const double hi = (1.0 / 3) / (kBatchStd + kEps), lo = (-2.0 / 3) / (kBatchStd + kEps);
  expect_near_all(run(AdvantageEstimator::BatchStd), {hi, lo, 0, 0, hi, hi, hi, lo, 0});
}

TEST(Advantages, RlooLeaveOneOutBaseline) {
  // g0 sum 2: 1 - (2-1)/2 = 0.5, 0 - 2/2 = -1.  g2 sum 8: 3 - 5/2 = 0.5, 2 - 6/2 = -1.
  expect_near_all(run(AdvantageEstimator::Rloo), {0.5, -1, 0, 0, 0.5, 0.5, 0.5, -1, 0});
}

TEST(Advantages, RlooEqualsScaledDrGrpo) {
  // r_i - mean_{-i} = n/(n-1) (r_i - mean): an identity, checked on the example.
  const auto rloo = run(AdvantageEstimator::Rloo);
  const auto dr = run(AdvantageEstimator::DrGrpo);
  for (int i : {0, 1, 4, 5, 6, 7}) EXPECT_NEAR(rloo[i], 1.5 * dr[i], 1e-12);
}

TEST(Advantages, ReinforcePPWhitensOverTheBatch) {
  const double d = kBatchStd + kEps;  // batch mean 1.5
  expect_near_all(run(AdvantageEstimator::ReinforcePP),
                  {-0.5 / d, -1.5 / d, 0, -1.0 / d, -0.5 / d, 1.5 / d, 1.5 / d, 0.5 / d, 0});
}

TEST(Advantages, ReinforcePPBaselineCentresInGroupThenWhitens) {
  // Centred values of samples with a baseline: 1/3,-2/3,1/3 (g0), 1/3,1/3,-2/3 (g2):
  // mean 0, squared deviations 12/9, Bessel variance (4/3)/5 = 4/15.
  // The singleton (sample 3) gets 0 and is not part of the statistics.
  const double d = std::sqrt(4.0 / 15.0) + kEps;
  const double hi = (1.0 / 3) / d, lo = (-2.0 / 3) / d;
  expect_near_all(run(AdvantageEstimator::ReinforcePPBaseline), {hi, lo, 0, 0, hi, hi, hi, lo, 0});
}

TEST(Advantages, ZeroVarianceGroupGetsExactZero) {
  const Rewards r = {1.0, 1.0, 1.0, 0.0, 1.0};
  const std::vector<int64_t> g = {3, 3, 3, 8, 8};
  for (auto e : {AdvantageEstimator::Grpo, AdvantageEstimator::DrGrpo, AdvantageEstimator::BatchStd,
                 AdvantageEstimator::Rloo}) {
    AdvantageOptions o;
    o.estimator = e;
    const auto a = compute_advantages(r, g, o);
    EXPECT_EQ(a[0], 0.0) << advantage_estimator_name(e);
    EXPECT_EQ(a[2], 0.0) << advantage_estimator_name(e);
    EXPECT_NE(a[3], 0.0) << advantage_estimator_name(e);
  }
}

TEST(Advantages, StdEpsIsConfigurable) {
  AdvantageOptions o;
  o.std_eps = 0.0;
  const Rewards r = {0.0, 1.0};
  const std::vector<int64_t> g = {0, 0};
  EXPECT_NEAR(compute_advantages(r, g, o)[1], 0.5 / std::sqrt(0.5), 1e-12);
}

TEST(Advantages, EmptyBatch) {
  EXPECT_TRUE(compute_advantages(Rewards{}, std::vector<int64_t>{}).empty());
}

TEST(Advantages, ErrorsNameTheProblem) {
  const Rewards r = {1.0, NAN};
  const std::vector<int64_t> g1 = {0};
  const std::vector<int64_t> g2 = {0, 0};
  try {
    compute_advantages(r, g1);
    FAIL() << "no throw";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(),
                 "compute_advantages: rewards has 2 entries but group_ids has 1; pass one group id per sample");
  }
  try {
    compute_advantages(r, g2);
    FAIL() << "no throw";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(),
                 "compute_advantages: rewards[1] is nan; mark a missing reward with std::nullopt, never NaN or "
                 "infinity");
  }
  AdvantageOptions o;
  o.std_eps = -1;
  try {
    compute_advantages(Rewards{}, std::vector<int64_t>{}, o);
    FAIL() << "no throw";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "algorithm.std_eps must be a finite value >= 0, got -1 (TRL uses 1e-4)");
  }
}

TEST(Advantages, NamesRoundTrip) {
  for (auto e : {AdvantageEstimator::Grpo, AdvantageEstimator::DrGrpo, AdvantageEstimator::BatchStd,
                 AdvantageEstimator::Rloo, AdvantageEstimator::ReinforcePP,
                 AdvantageEstimator::ReinforcePPBaseline}) {
    EXPECT_EQ(parse_advantage_estimator(advantage_estimator_name(e)), e);
  }
  EXPECT_EQ(parse_advantage_estimator("dr_grpo"), AdvantageEstimator::DrGrpo);
  try {
    parse_advantage_estimator("ppo");
    FAIL() << "no throw";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(),
                 "unknown advantage estimator 'ppo'; expected one of: grpo, dr_grpo, batch_std, rloo, "
                 "reinforce_pp, reinforce_pp_baseline");
  }
}

TEST(DynamicSampling, ZeroVarianceGroupsInFirstAppearanceOrder) {
  // g5 all equal, g0 varies, g1 singleton, g9 all missing, g2 equal once the missing one is ignored.
  const Rewards r = {1.0, 1.0, 1.0, 0.0, 0.5, std::nullopt, std::nullopt, 2.0, std::nullopt, 2.0};
  const std::vector<int64_t> g = {5, 5, 0, 0, 1, 9, 9, 2, 2, 2};
  EXPECT_EQ(zero_variance_groups(r, g), (std::vector<int64_t>{5, 1, 9, 2}));
  EXPECT_EQ(zero_variance_groups(kRewards, kGroups), (std::vector<int64_t>{1, 9}));
}

TEST(ExpandToTokens, BroadcastsUnderTheMask) {
  const auto mask = torch::tensor({1, 1, 0, 0, 1, 1}, torch::kInt64).view({2, 3});
  const std::vector<double> adv = {0.5, -1.0};
  const auto out = expand_to_tokens(adv, mask);
  EXPECT_EQ(out.scalar_type(), torch::kFloat32);
  EXPECT_TRUE(torch::equal(out, torch::tensor({0.5f, 0.5f, 0.0f, 0.0f, -1.0f, -1.0f}).view({2, 3})));
  const auto out64 = expand_to_tokens(adv, mask.to(torch::kFloat32), torch::kFloat64);
  EXPECT_EQ(out64.scalar_type(), torch::kFloat64);
  EXPECT_DOUBLE_EQ(out64[1][2].item<double>(), -1.0);
  try {
    expand_to_tokens(std::vector<double>{1.0}, mask);
    FAIL() << "no throw";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "expand_to_tokens: 1 per-sample values for a mask of 2 rows; pass one value per row");
  }
}

}  // namespace
}  // namespace rlf::algo

// Credit assignment (algorithms/credit.h) against hand-computed values:
// episode, turn and token credit; the three agree on single-turn episodes;
// missing outcomes; tokens with loss weight 0; and batch statistics through
// the BatchSum seam give on two "ranks" what one process gives.
#include <gtest/gtest.h>

#include <barrier>
#include <cmath>
#include <thread>

#include "algorithms/credit.h"
#include "tests/support/test_env.h"

namespace rlf::algo {
namespace {

constexpr double kCreditEps = 1e-4;

struct Ep {
  int64_t group = 0;
  std::optional<double> outcome;
  std::vector<double> turn_rewards;
  std::vector<float> weight;
  std::vector<int32_t> turn;
  std::vector<float> token_reward;
  std::vector<float> value;

  CreditInput input() const {
    CreditInput in;
    in.group = group;
    in.outcome = outcome;
    in.turn_rewards = turn_rewards;
    in.loss_weight = weight;
    in.token_turn = turn;
    in.token_reward = token_reward;
    in.value = value;
    return in;
  }
};

std::vector<std::vector<float>> credit(const std::vector<Ep>& eps, CreditOptions o, const BatchSum& sum = {}) {
  std::vector<CreditInput> in;
  for (const Ep& e : eps) in.push_back(e.input());
  return assign_credit(in, o, sum);
}

TEST(Credit, EpisodeModeBroadcastsTheEstimatorsAdvantageToPolicyTokens) {
  // Prompt (2 tokens), a 2-token turn, a 1-token observation, a 1-token turn.
  const std::vector<float> w = {0, 0, 1, 1, 0, 1};
  const std::vector<int32_t> t = {0, 0, 0, 0, 0, 1};
  std::vector<Ep> eps = {{0, 1.0, {}, w, t, {}}, {0, 0.0, {}, w, t, {}}, {1, 0.5, {}, w, t, {}}, {1, 0.5, {}, w, t, {}}};
  CreditOptions o;
  auto a = credit(eps, o);
  const double s = std::sqrt(0.5) + kCreditEps;  // std of {1, 0} (n - 1)
  for (size_t k : {2u, 3u, 5u}) {
    EXPECT_NEAR(a[0][k], 0.5 / s, 1e-6);
    EXPECT_NEAR(a[1][k], -0.5 / s, 1e-6);
    EXPECT_EQ(a[2][k], 0.0f);  // a zero-variance group
  }
  for (size_t k : {0u, 1u, 4u}) EXPECT_EQ(a[0][k], 0.0f) << "token " << k << " has loss weight 0";
}

TEST(Credit, TurnModeDiscountsReturnsPerTurnAgainstTheEpisodeBaseline) {
  // A: turns 0 (tokens 1-2) and 1 (token 4); rewards r = [0.5, 0 + outcome 2]; gamma 0.5
  //    G_1 = 2, G_0 = 0.5 + 0.5 * 2 = 1.5.   B: one turn, outcome 0, G_0 = 0.
  std::vector<Ep> eps = {{0, 2.0, {0.5, 0.0}, {0, 1, 1, 0, 1}, {0, 0, 0, 0, 1}, {}},
                         {0, 0.0, {0.0}, {0, 1, 1, 0, 0}, {0, 0, 0, 0, 0}, {}}};
  CreditOptions o;
  o.mode = CreditMode::Turn;
  o.gamma = 0.5;
  auto a = credit(eps, o);
  const double mean = 0.75, s = std::sqrt(2 * 0.75 * 0.75) + kCreditEps;  // over G_0 = {1.5, 0}
  EXPECT_NEAR(a[0][1], (1.5 - mean) / s, 1e-6);
  EXPECT_NEAR(a[0][2], (1.5 - mean) / s, 1e-6);
  EXPECT_NEAR(a[0][4], (2.0 - mean) / s, 1e-6);
  EXPECT_NEAR(a[1][1], (0.0 - mean) / s, 1e-6);
  EXPECT_EQ(a[0][3], 0.0f);  // the observation
}

TEST(Credit, TokenModePlacesTurnRewardsAndTheOutcomeOnTheLastTokens) {
  // Policy tokens 2, 3 (turn 0) and 5 (turn 1); token reward 0.25 at 3; turn
  // rewards [0.1, 0]; outcome 1; gamma 1:
  //   r_2 = 0, r_3 = 0.25 + 0.1, r_5 = 1  ->  G_5 = 1, G_3 = G_2 = 1.35.
  // Second episode: one token, outcome 0, G = 0. dr_grpo: baseline = mean of {1.35, 0}.
  std::vector<Ep> eps = {{0, 1.0, {0.1, 0.0}, {0, 0, 1, 1, 0, 1}, {0, 0, 0, 0, 0, 1}, {0, 0, 0, 0.25f, 0, 0}},
                         {0, 0.0, {}, {0, 1}, {0, 0}, {}}};
  CreditOptions o;
  o.mode = CreditMode::Token;
  o.advantage.estimator = AdvantageEstimator::DrGrpo;
  auto a = credit(eps, o);
  EXPECT_NEAR(a[0][2], 1.35 - 0.675, 1e-6);
  EXPECT_NEAR(a[0][3], 1.35 - 0.675, 1e-6);
  EXPECT_NEAR(a[0][5], 1.0 - 0.675, 1e-6);
  EXPECT_NEAR(a[1][1], -0.675, 1e-6);
  // With a discount, returns shrink towards the start: G_3 = 0.35 + 0.5 * 1, G_2 = 0.5 * G_3.
  o.gamma = 0.5;
  a = credit(eps, o);
  const double g3 = 0.35 + 0.5, g2 = 0.5 * g3, mean = g2 / 2;
  EXPECT_NEAR(a[0][2], g2 - mean, 1e-6);
  EXPECT_NEAR(a[0][3], g3 - mean, 1e-6);
  EXPECT_NEAR(a[0][5], 1.0 - mean, 1e-6);
}

TEST(Credit, TheThreeModesAgreeOnSingleTurnEpisodes) {
  std::vector<Ep> eps;
  for (int i = 0; i < 12; ++i) {
    Ep e;
    e.group = i / 4;
    e.outcome = std::sin(1.7 * i) + (i % 3 == 0 ? 1 : 0);
    e.weight = {0, 0, 1, 1, 1};
    e.turn = {0, 0, 0, 0, 0};
    eps.push_back(e);
  }
  for (AdvantageEstimator est : {AdvantageEstimator::Grpo, AdvantageEstimator::DrGrpo, AdvantageEstimator::Rloo,
                                 AdvantageEstimator::BatchStd, AdvantageEstimator::ReinforcePP,
                                 AdvantageEstimator::ReinforcePPBaseline}) {
    CreditOptions o;
    o.advantage.estimator = est;
    auto episode = credit(eps, o);
    o.mode = CreditMode::Turn;
    auto turn = credit(eps, o);
    o.mode = CreditMode::Token;
    auto token = credit(eps, o);
    std::vector<std::optional<double>> r;
    std::vector<int64_t> g;
    for (const Ep& e : eps) r.push_back(e.outcome), g.push_back(e.group);
    const auto adv = compute_advantages(r, g, o.advantage);
    for (size_t i = 0; i < eps.size(); ++i)
      for (size_t t = 2; t < 5; ++t) {
        EXPECT_NEAR(episode[i][t], adv[i], 1e-6) << advantage_estimator_name(est);
        EXPECT_NEAR(turn[i][t], adv[i], 1e-5) << advantage_estimator_name(est);
        EXPECT_NEAR(token[i][t], adv[i], 1e-5) << advantage_estimator_name(est);
      }
  }
}

TEST(Credit, AMissingOutcomeGetsNothingAndCountsInNoStatistic) {
  std::vector<Ep> eps = {{0, 1.0, {}, {0, 1}, {0, 0}, {}}, {0, std::nullopt, {0.7}, {0, 1}, {0, 0}, {}},
                         {0, 0.0, {}, {0, 1}, {0, 0}, {}}};
  for (CreditMode m : {CreditMode::Episode, CreditMode::Turn, CreditMode::Token}) {
    CreditOptions o;
    o.mode = m;
    auto a = credit(eps, o);
    EXPECT_EQ(a[1][1], 0.0f);
    const double s = std::sqrt(0.5) + kCreditEps;  // the group is {1, 0}
    EXPECT_NEAR(a[0][1], 0.5 / s, 1e-6);
    EXPECT_NEAR(a[2][1], -0.5 / s, 1e-6);
  }
}

TEST(Credit, EpisodeReturnAddsTurnAndTokenRewardsOnPolicyTokensOnly) {
  Ep e{0, 1.0, {0.5, -0.25}, {0, 1, 0, 1}, {0, 0, 0, 1}, {9.0f, 0.5f, 9.0f, 0.125f}};
  EXPECT_DOUBLE_EQ(*episode_return(e.input()), 1.0 + 0.25 + 0.625);  // the 9s are on weight-0 tokens
  e.outcome.reset();
  EXPECT_FALSE(episode_return(e.input()));
}

// Two threads as two ranks: BatchSum adds both ranks' partial sums.
class TwoRanks {
 public:
  BatchSum hook(int rank) {
    return [this, rank](std::span<double> v) {
      slots_[rank].assign(v.begin(), v.end());
      barrier_.arrive_and_wait();
      for (size_t i = 0; i < v.size(); ++i) v[i] = slots_[0][i] + slots_[1][i];
      barrier_.arrive_and_wait();
    };
  }

 private:
  std::vector<double> slots_[2];
  std::barrier<> barrier_{2};
};

TEST(Credit, BatchStatisticsThroughTheSeamMatchOneProcess) {
  std::vector<Ep> eps;
  for (int i = 0; i < 16; ++i) {
    Ep e;
    e.group = i / 4;
    e.outcome = std::cos(0.9 * i) * 2 + (i % 5 == 0);
    e.weight = {0, 1, 1};
    e.turn = {0, 0, 0};
    e.turn_rewards = {0.1 * (i % 3)};
    eps.push_back(e);
  }
  for (AdvantageEstimator est : {AdvantageEstimator::BatchStd, AdvantageEstimator::ReinforcePP,
                                 AdvantageEstimator::ReinforcePPBaseline}) {
    CreditOptions o;
    o.mode = CreditMode::Turn;
    o.advantage.estimator = est;
    auto whole = credit(eps, o);
    // Groups 0-1 on rank 0, groups 2-3 on rank 1.
    std::vector<Ep> half[2] = {std::vector<Ep>(eps.begin(), eps.begin() + 8), std::vector<Ep>(eps.begin() + 8, eps.end())};
    std::vector<std::vector<float>> out[2];
    TwoRanks ranks;
    std::thread t1([&] { out[1] = credit(half[1], o, ranks.hook(1)); });
    out[0] = credit(half[0], o, ranks.hook(0));
    t1.join();
    for (size_t i = 0; i < eps.size(); ++i)
      for (size_t t = 1; t < 3; ++t)
        EXPECT_NEAR(out[i / 8][i % 8][t], whole[i][t], 1e-6) << advantage_estimator_name(est) << " episode " << i;
  }
}

TEST(Credit, GaeModeRunsGaeOverThePolicyTokensAcrossTurns) {
  // Prompt (2), turn 0 (2 tokens), an observation (1), turn 1 (1 token). The
  // turn reward 0.5 lands on turn 0's last token, the outcome 1 on the last
  // policy token: step rewards [0, 0.5, 1] with values [0.2, 0.4, 0.3], the
  // case of Gae.MatchesHandValues. Values off policy tokens are never read.
  Ep e{0, 1.0, {0.5}, {0, 0, 1, 1, 0, 1}, {0, 0, 0, 0, 0, 1}, {}, {9, 9, 0.2f, 0.4f, 9, 0.3f}};
  Ep missing = e;
  missing.outcome.reset();
  CreditOptions o;
  o.mode = CreditMode::Gae;
  o.gamma = 0.9;
  o.lambda = 0.8;
  std::vector<CreditInput> in = {e.input(), missing.input()};
  std::vector<std::vector<float>> returns;
  auto a = assign_credit(in, o, {}, &returns);
  const double adv[] = {0.78928, 0.874, 0.7};
  const size_t at[] = {2, 3, 5};
  const float v[] = {0.2f, 0.4f, 0.3f};
  for (int k = 0; k < 3; ++k) {
    EXPECT_NEAR(a[0][at[k]], adv[k], 1e-6) << "token " << at[k];
    EXPECT_NEAR(returns[0][at[k]], adv[k] + v[k], 1e-6) << "token " << at[k];
  }
  for (size_t t : {0u, 1u, 4u}) {
    EXPECT_EQ(a[0][t], 0.0f);
    EXPECT_EQ(returns[0][t], 0.0f);
  }
  EXPECT_EQ(a[1], std::vector<float>(6, 0.0f)) << "a missing outcome gets no credit";
  EXPECT_TRUE(returns[1].empty()) << "... and no value target";
  // Whitened: the policy tokens of the episodes with an outcome have mean 0 and unit variance.
  o.whiten = true;
  a = assign_credit(in, o);
  const double mean = (0.78928 + 0.874 + 0.7) / 3;
  double var = 0;
  for (double x : adv) var += (x - mean) * (x - mean) / 2;
  for (int k = 0; k < 3; ++k) EXPECT_NEAR(a[0][at[k]], (adv[k] - mean) / std::sqrt(var + 1e-8), 1e-4);
  EXPECT_EQ(a[1], std::vector<float>(6, 0.0f));
  // Without the critic's values: an error.
  Ep no_values = e;
  no_values.value.clear();
  EXPECT_NE(test::error_of([&] { credit({no_values}, o); }).find("credit mode gae needs the critic's values"),
            std::string::npos);
}

TEST(Credit, GaeWithTurnValuesStepsOverTurns) {
  // The episode of GaeModeRunsGaeOverThePolicyTokensAcrossTurns with one value per turn (its first policy token):
  // turn rewards r_0 = 0.5, r_1 = 1 (the outcome); V_0 = 0.2 (token 2), V_1 = 0.3 (token 5); token 3's is unread.
  // delta_1 = 1 - 0.3 = 0.7; delta_0 = 0.5 + 0.9*0.3 - 0.2 = 0.57; A_1 = 0.7; A_0 = 0.57 + 0.72*0.7 = 1.074.
  Ep e{0, 1.0, {0.5}, {0, 0, 1, 1, 0, 1}, {0, 0, 0, 0, 0, 1}, {}, {9, 9, 0.2f, 9, 9, 0.3f}};
  CreditOptions o;
  o.mode = CreditMode::Gae;
  o.gamma = 0.9;
  o.lambda = 0.8;
  o.turn_values = true;
  std::vector<CreditInput> in = {e.input()};
  std::vector<std::vector<float>> returns;
  auto a = assign_credit(in, o, {}, &returns);
  EXPECT_NEAR(a[0][2], 1.074, 1e-6);
  EXPECT_NEAR(a[0][3], 1.074, 1e-6) << "a turn's advantage on all its tokens";
  EXPECT_NEAR(a[0][5], 0.7, 1e-6);
  for (size_t t : {0u, 1u, 4u}) EXPECT_EQ(a[0][t], 0.0f);
  EXPECT_NEAR(returns[0][2], 1.274, 1e-6) << "the target sits on the turn's first token";
  EXPECT_TRUE(std::isnan(returns[0][3])) << "no target on the turn's other tokens";
  EXPECT_NEAR(returns[0][5], 1.0, 1e-6);
  EXPECT_EQ(returns[0][4], 0.0f);
}

TEST(Credit, OptionErrorsNameTheKey) {
  CreditOptions o;
  o.gamma = 0;
  EXPECT_EQ(test::error_of([&] { o.validate(); }), "algorithm.gamma must be in (0, 1] (got 0; 1 = no discount)");
  EXPECT_EQ(test::error_of([] { parse_credit_mode("turns"); }),
            "unknown credit mode 'turns'; expected one of: episode, turn, token, gae");
  Ep bad{0, 1.0, {}, {0, 1}, {0}, {}};
  EXPECT_NE(test::error_of([&] { credit({bad}, CreditOptions{}); }).find("token turns for 2 tokens"), std::string::npos);
}

}  // namespace
}  // namespace rlf::algo

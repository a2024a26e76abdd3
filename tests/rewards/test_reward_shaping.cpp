// Combining rewards beyond a weighted sum (rewards/reward_shaping.h): clip,
// group centring and gating on a hand-computed group, missing scores stay
// missing, the gate reads raw scores, Lagrangian constraints by dual ascent
// through the reward set (weights -lambda, state out and back), and the
// [[reward]] keys' errors.
#include <gtest/gtest.h>

#include <cmath>

#include "rewards/registry.h"
#include "rewards/reward_set.h"
#include "rewards/reward_shaping.h"
#include "tests/rewards/reward_test_util.h"
#include "tests/support/test_env.h"

namespace rlf {
namespace {

using test::error_of;

// Three samples, components (correct, style, steps); "-" = missing:
//   0: (1, 3.0, 0.4)   1: (0, -2.0, 0.9)   2: (1, -, 0.2)
const ComponentMatrix kRaw = {{1.0, 3.0, 0.4}, {0.0, -2.0, 0.9}, {1.0, std::nullopt, 0.2}};

TEST(RewardShaping, ClipCentreAndGateMatchHandValues) {
  std::vector<ComponentShaping> s(3);
  s[1].clip_low = -1, s[1].clip_high = 1;  // style: clipped to [-1, 1] -> 1, -1, - ; centred on their mean 0
  s[1].center = true;
  s[2].center = true;                      // steps: mean 0.5 -> -0.1, 0.4, -0.3 ...
  s[2].gate = "correct", s[2].gate_index = 0, s[2].gate_min = 0.5;  // ... and only where correct >= 0.5
  const ComponentMatrix out = apply_shaping(kRaw, s);
  EXPECT_EQ(out[0][0], 1.0);
  EXPECT_EQ(out[1][0], 0.0);
  EXPECT_DOUBLE_EQ(*out[0][1], 1.0);
  EXPECT_DOUBLE_EQ(*out[1][1], -1.0);
  EXPECT_FALSE(out[2][1].has_value()) << "a missing score stays missing";
  EXPECT_NEAR(*out[0][2], -0.1, 1e-12);
  EXPECT_EQ(*out[1][2], 0.0) << "gated off: sample 1 is not correct";
  EXPECT_NEAR(*out[2][2], -0.3, 1e-12);
  EXPECT_TRUE(passes_gate(kRaw, s, 0, 2));
  EXPECT_FALSE(passes_gate(kRaw, s, 1, 2));
  EXPECT_TRUE(passes_gate(kRaw, s, 1, 1)) << "no gate: always counts";
  // A missing gate score gates off; the gate reads the raw scores, not the shaped ones.
  ComponentMatrix raw = kRaw;
  raw[2][0].reset();
  s[0].center = true;  // centring the gate's own component does not move the gate
  const ComponentMatrix out2 = apply_shaping(raw, s);
  EXPECT_EQ(*out2[2][2], 0.0);
  EXPECT_NEAR(*out2[0][2], -0.1, 1e-12);
  EXPECT_NEAR(*out2[0][0], 0.5, 1e-12);
  // No shaping: the same matrix.
  EXPECT_EQ(apply_shaping(kRaw, std::vector<ComponentShaping>(3)), kRaw);
}

TEST(RewardShaping, DualAscentKeepsTheMultiplierNonNegative) {
  EXPECT_DOUBLE_EQ(dual_ascent(1.0, 0.5, 0.2, 0.1), 1.03);   // over the threshold: lambda grows
  EXPECT_DOUBLE_EQ(dual_ascent(1.0, 0.0, 0.2, 0.5), 0.9);    // under it: shrinks
  EXPECT_DOUBLE_EQ(dual_ascent(0.05, 0.0, 0.2, 0.5), 0.0);   // never below 0
}

// A reward returning fixed scores.
class Fixed : public Reward {
 public:
  explicit Fixed(std::vector<std::optional<double>> s) : s_(std::move(s)) {}
  std::string name() const override { return "fixed"; }
  std::vector<RewardResult> score(const RewardGroup&) override {
    std::vector<RewardResult> out(s_.size());
    for (size_t i = 0; i < s_.size(); ++i) out[i].score = s_[i];
    return out;
  }

 private:
  std::vector<std::optional<double>> s_;
};

TEST(RewardShaping, AConstrainedComponentWeighsMinusLambdaAndAscends) {
  RewardSet set;
  set.add("task", 1.0, std::make_unique<Fixed>(std::vector<std::optional<double>>{1.0, 0.0}));
  ComponentShaping c;
  c.constraint_max = 0.2;
  c.lambda_init = 0.5;
  c.lambda_lr = 1.0;
  set.add("cost", 3.0, std::make_unique<Fixed>(std::vector<std::optional<double>>{1.0, 0.0}), c);
  EXPECT_TRUE(set.has_constraints());
  EXPECT_EQ(set.components()[1].weight, -0.5) << "the weight is -lambda_init, not the table's";
  auto g = test::make_group({"a", "b"});
  GroupScores s = set.score(g);
  auto t = s.totals(RewardAggregation::sum_then_normalize);
  EXPECT_DOUBLE_EQ(*t[0], 1.0 - 0.5);
  EXPECT_DOUBLE_EQ(*t[1], 0.0);
  set.update_constraints({0.5, 0.5});  // mean cost 0.5 > 0.2: lambda 0.5 + 1.0 * 0.3
  EXPECT_DOUBLE_EQ(set.components()[1].lambda, 0.8);
  EXPECT_DOUBLE_EQ(set.components()[1].weight, -0.8);
  set.update_constraints({0.5, std::nullopt});  // nothing scored: unchanged
  EXPECT_DOUBLE_EQ(set.components()[1].lambda, 0.8);
  const Json state = set.constraint_state();
  EXPECT_EQ(state, Json({{"cost", 0.8}}));
  set.update_constraints({0.5, 0.0});
  EXPECT_DOUBLE_EQ(set.components()[1].lambda, 0.6);
  set.restore_constraints(state, "ckpt");
  EXPECT_DOUBLE_EQ(set.components()[1].weight, -0.8);
  EXPECT_NE(error_of([&] { set.restore_constraints(Json::object(), "ckpt"); })
                .find("ckpt: no Lagrange multiplier for the constrained reward 'cost'"),
            std::string::npos);
}

TEST(RewardShaping, GatedComponentsAndTheirTablesThroughTheRegistry) {
  RewardSet set = make_reward_set(Json::parse(R"([
    {"type": "math", "name": "correct", "answer_format": "gsm8k"},
    {"type": "format", "name": "short", "pattern": "^.{0,6}$", "gate": "correct", "clip": [0, 0.5]}
  ])"), "cfg.toml");
  auto g = test::make_group({"#### 4", "#### 5", "the sum: #### 4"}, Json::object(), "4");
  GroupScores s = set.score(g);
  EXPECT_TRUE(s.counts(1, 0));
  EXPECT_FALSE(s.counts(1, 1)) << "wrong answer: the style reward is gated off";
  auto t = s.totals(RewardAggregation::sum_then_normalize);
  EXPECT_DOUBLE_EQ(*t[0], 1.0 + 0.5) << "format 1 clipped to 0.5";
  EXPECT_DOUBLE_EQ(*t[1], 0.0);
  EXPECT_DOUBLE_EQ(*t[2], 1.0);
  EXPECT_EQ(s.results[1][1].score, 1.0) << "the raw score is kept for the logs";
}

TEST(RewardShaping, TableErrorsNameTheKey) {
  auto err = [](const char* tables) { return error_of([&] { make_reward_set(Json::parse(tables), "cfg.toml"); }); };
  EXPECT_NE(err(R"([{"type": "math", "clip": [1, 0]}])").find("cfg.toml [[reward]] #1: 'clip' = [1,0] needs low <= high"),
            std::string::npos);
  EXPECT_NE(err(R"([{"type": "math", "clip": 1}])").find("'clip' must be [low, high]"), std::string::npos);
  EXPECT_NE(err(R"([{"type": "math", "center": "batch"}])").find("'center' must be \"group\""), std::string::npos);
  EXPECT_NE(err(R"([{"type": "math", "gate": "corect"}])").find("gate = \"corect\" names no [[reward]] component (components: math)"),
            std::string::npos);
  EXPECT_NE(err(R"([{"type": "math", "gate": "math"}])").find("gate names the component itself"), std::string::npos);
  EXPECT_NE(err(R"([{"type": "math", "gate_min": 1}])").find("'gate_min' without 'gate'"), std::string::npos);
  EXPECT_NE(err(R"([{"type": "math", "lambda_lr": 1}])").find("'lambda_lr' without 'constraint_max'"),
            std::string::npos);
  EXPECT_NE(err(R"([{"type": "math", "constraint_max": 0.1, "weight": 2}])").find("drop 'weight' or 'constraint_max'"),
            std::string::npos);
  EXPECT_NE(err(R"([{"type": "math", "constraint_max": 0.1, "lambda_init": -1}])").find("'lambda_init' must be >= 0"),
            std::string::npos);
}

}  // namespace
}  // namespace rlf

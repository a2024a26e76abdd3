// The reward set, both aggregation modes of TRL's multi_objective_aggregation
// on a hand-computed group, per-component statistics, and the registry's
// errors (exact texts).
#include <gtest/gtest.h>

#include <cmath>

#include "rewards/registry.h"
#include "rewards/reward_aggregation.h"
#include "rewards/reward_set.h"
#include "tests/rewards/reward_test_util.h"
#include "tests/support/test_env.h"
#include "util/fs.h"

namespace rlf {
namespace {

using test::error_of;
using test::make_group;

// ---- aggregation ----

// Four samples, two components with weights (1, 0.5); "-" = missing:
//   sample 0: (1,  0.5)   sample 1: (0, -)   sample 2: (1, -0.5)   sample 3: (-, -)
const ComponentMatrix kScores = {{1.0, 0.5}, {0.0, std::nullopt}, {1.0, -0.5}, {std::nullopt, std::nullopt}};
const std::vector<double> kWeights = {1.0, 0.5};

TEST(RewardAggregation, SumThenNormalizeIsAWeightedNanSum) {
  auto t = aggregate_rewards(kScores, kWeights, RewardAggregation::sum_then_normalize);
  ASSERT_EQ(t.size(), 4u);
  EXPECT_DOUBLE_EQ(*t[0], 1.0 + 0.5 * 0.5);
  EXPECT_DOUBLE_EQ(*t[1], 0.0);  // the missing component is skipped
  EXPECT_DOUBLE_EQ(*t[2], 1.0 - 0.5 * 0.5);
  EXPECT_FALSE(t[3].has_value());  // nothing scored it
}

TEST(RewardAggregation, NormalizeThenSumNormalisesEachComponentFirst) {
  // Component 0 over {1, 0, 1}: mean 2/3, sample std sqrt(((1/3)^2 + (2/3)^2 + (1/3)^2) / 2) = sqrt(1/3).
  // Component 1 over {0.5, -0.5}: mean 0, sample std sqrt((0.25 + 0.25) / 1) = sqrt(1/2).
  const double s0 = std::sqrt(1.0 / 3.0) + 1e-4, s1 = std::sqrt(0.5) + 1e-4;
  auto t = aggregate_rewards(kScores, kWeights, RewardAggregation::normalize_then_sum);
  EXPECT_NEAR(*t[0], (1.0 / 3.0) / s0 + 0.5 * (0.5 / s1), 1e-12);
  EXPECT_NEAR(*t[1], (-2.0 / 3.0) / s0, 1e-12);
  EXPECT_NEAR(*t[2], (1.0 / 3.0) / s0 + 0.5 * (-0.5 / s1), 1e-12);
  EXPECT_FALSE(t[3].has_value());
  EXPECT_NEAR(*t[0], 0.9307536841704761, 1e-12);  // the same numbers, evaluated once by hand in Python
  EXPECT_NEAR(*t[1], -1.1545005730142686, 1e-12);
  EXPECT_NEAR(*t[2], 0.22374688884379268, 1e-12);
}

TEST(RewardAggregation, ConstantAndSingleScoresNormaliseToZero) {
  ComponentMatrix m = {{1.0, 3.0}, {1.0, std::nullopt}};
  auto t = aggregate_rewards(m, {1.0, 1.0}, RewardAggregation::normalize_then_sum);
  EXPECT_DOUBLE_EQ(*t[0], 0.0);
  EXPECT_DOUBLE_EQ(*t[1], 0.0);
}

TEST(RewardAggregation, NamesAndShapeErrors) {
  EXPECT_EQ(parse_aggregation("normalize_then_sum"), RewardAggregation::normalize_then_sum);
  EXPECT_EQ(error_of([] { parse_aggregation("mean"); }),
            "unknown reward aggregation 'mean'; use \"sum_then_normalize\" or \"normalize_then_sum\"");
  EXPECT_EQ(error_of([] { aggregate_rewards({{1.0}}, {1.0, 2.0}, RewardAggregation::sum_then_normalize); }),
            "aggregate_rewards: sample 0 has 1 component scores, but there are 2 weights");
}

// ---- the set ----

// A reward that returns fixed scores (nullopt = missing) or throws.
class FixedReward : public Reward {
 public:
  explicit FixedReward(std::vector<std::optional<double>> scores, bool throws = false)
      : scores_(std::move(scores)), throws_(throws) {}
  std::string name() const override { return "fixed"; }
  std::vector<RewardResult> score(const RewardGroup& group) override {
    if (throws_) fail("record has no field 'x'");
    std::vector<RewardResult> out(scores_.size());
    for (size_t i = 0; i < scores_.size(); ++i) {
      out[i].score = scores_[i];
      if (!scores_[i]) out[i].missing_reason = "fixed: missing";
    }
    return out;
  }

 private:
  std::vector<std::optional<double>> scores_;
  bool throws_;
};

TEST(RewardSet, ScoresEveryComponentAndAggregates) {
  RewardSet set;
  set.add("correct", 1.0, make_reward("math", {{"answer_format", "gsm8k"}}, "test"));
  set.add("fixed", 0.5, std::make_unique<FixedReward>(std::vector<std::optional<double>>{0.5, std::nullopt, -0.5}));
  GroupScores s = set.score(make_group({"#### 4", "#### 5", "#### 4"}, {}, "4"));
  ASSERT_EQ(s.names, (std::vector<std::string>{"correct", "fixed"}));
  ASSERT_EQ(s.n_samples(), 3u);
  EXPECT_EQ(s.results[0][1].explanation, "expected 4, got 5");
  EXPECT_EQ(s.describe(0), "correct=1 (correct: expected 4, got 4); fixed=0.5");
  EXPECT_EQ(s.describe(1), "correct=0 (expected 4, got 5); fixed=missing (fixed: missing)");
  auto totals = s.totals(RewardAggregation::sum_then_normalize);
  EXPECT_DOUBLE_EQ(*totals[0], 1.25);
  EXPECT_DOUBLE_EQ(*totals[1], 0.0);
  EXPECT_DOUBLE_EQ(*totals[2], 0.75);

  auto stats = component_stats({s, s});
  ASSERT_EQ(stats.size(), 2u);
  EXPECT_EQ(stats[0].name, "correct");
  EXPECT_DOUBLE_EQ(stats[0].mean, 4.0 / 6.0);
  EXPECT_NEAR(stats[0].std, std::sqrt((4 * (1.0 / 9.0) + 2 * (4.0 / 9.0)) / 5.0), 1e-12);
  EXPECT_EQ(stats[0].n_scored, 6);
  EXPECT_EQ(stats[1].n_missing, 2);
  EXPECT_DOUBLE_EQ(stats[1].mean, 0.0);
}

TEST(RewardSet, ComponentErrorsNameTheComponent) {
  RewardSet set;
  set.add("broken", 1.0, std::make_unique<FixedReward>(std::vector<std::optional<double>>{}, true));
  EXPECT_EQ(error_of([&] { set.score(make_group({"a"})); }), "reward 'broken': record has no field 'x'");
  RewardSet wrong;
  wrong.add("short", 1.0, std::make_unique<FixedReward>(std::vector<std::optional<double>>{1.0}));
  EXPECT_EQ(error_of([&] { wrong.score(make_group({"a", "b"})); }), "reward 'short' returned 1 results for 2 completions");
  EXPECT_EQ(error_of([&] { wrong.add("short", 1.0, std::make_unique<FixedReward>(std::vector<std::optional<double>>{})); }),
            "reward set: two rewards are named 'short'; give one of them a different name = \"...\"");
}

TEST(RewardSet, NonFiniteScoresBecomeMissing) {
  RewardSet set;
  set.add("nan", 1.0, std::make_unique<FixedReward>(std::vector<std::optional<double>>{std::nan(""), 1.0}));
  GroupScores s = set.score(make_group({"a", "b"}));
  EXPECT_FALSE(s.results[0][0].score);
  EXPECT_EQ(s.results[0][0].missing_reason, "non-finite score nan");
}

TEST(RewardSet, IndexOfNamesTheKeyAndTheComponents) {
  RewardSet set;
  EXPECT_EQ(error_of([&] { set.index_of("x", "algorithm.gold_reward"); }),
            "algorithm.gold_reward = \"x\" names no [[reward]] component (components: none configured)");
  set.add("correct", 1.0, std::make_unique<FixedReward>(std::vector<std::optional<double>>{1.0}));
  set.add("gold", 0.0, std::make_unique<FixedReward>(std::vector<std::optional<double>>{1.0}));
  EXPECT_EQ(set.index_of("correct", "k"), 0u);
  EXPECT_EQ(set.index_of("gold", "k"), 1u);
  EXPECT_EQ(error_of([&] { set.index_of("Gold", "algorithm.gold_reward"); }),
            "algorithm.gold_reward = \"Gold\" names no [[reward]] component (components: correct, gold)");
}

TEST(RewardSet, CorrectIsAboveTheThresholdAndNeverMissing) {
  EXPECT_TRUE(is_correct(1.0));
  EXPECT_TRUE(is_correct(0.5000001));
  EXPECT_FALSE(is_correct(kCorrectThreshold));  // strictly above
  EXPECT_FALSE(is_correct(std::nullopt));
  EXPECT_TRUE(is_correct(0.3, 0.2));
  EXPECT_FALSE(is_correct(0.2, 0.2));
  RewardSet set;
  set.add("c", 1.0, std::make_unique<FixedReward>(std::vector<std::optional<double>>{1.0, 0.5, std::nullopt, 0.7}));
  const GroupScores s = set.score(make_group({"a", "b", "c", "d"}));
  EXPECT_TRUE(s.correct(0, 0));
  EXPECT_FALSE(s.correct(0, 1));
  EXPECT_FALSE(s.correct(0, 2));
  EXPECT_TRUE(s.correct(0, 3));
}

// ---- registry ----

const std::string kWhere = "config.toml [[reward]] #2";

TEST(RewardRegistry, BuildsASetFromTables) {
  Json tables = Json::parse(R"([
    {"type": "math", "name": "correct", "weight": 1.0, "answer_format": "gsm8k"},
    {"type": "format", "preset": "think_answer", "weight": 0.25},
    {"type": "length", "max_length": 20, "cache_length": 5},
    {"type": "keywords", "field": "kw", "whole_word": false}
  ])");
  RewardSet set = make_reward_set(tables, "config.toml");
  ASSERT_EQ(set.size(), 4u);
  EXPECT_EQ(set.components()[0].name, "correct");
  EXPECT_EQ(set.components()[1].name, "format");
  EXPECT_EQ(set.components()[1].weight, 0.25);
  EXPECT_EQ(set.components()[3].reward->name(), "keywords");
  EXPECT_EQ(reward_types(), (std::vector<std::string>{"bleu", "chrf", "code", "countdown", "env", "external", "format",
                                                      "keywords", "length", "majority", "math", "rouge_l"}));
  EXPECT_EQ(error_of([&] { set.check_record({{"question", "q"}}, "4", "train.jsonl:9"); }),
            "train.jsonl:9: keywords reward needs the record field 'kw' (a list of strings or a comma-separated "
            "string) but the record has none; add it or set the reward's option 'field'");
}

TEST(RewardRegistry, UnknownTypeAndOptionErrors) {
  EXPECT_EQ(error_of([] { make_reward("maths", Json::object(), kWhere); }),
            "config.toml [[reward]] #2: unknown reward type 'maths'; valid types: bleu, chrf, code, countdown, env, external, "
            "format, keywords, length, majority, math, rouge_l");
  EXPECT_EQ(error_of([] { make_reward("math", {{"answer_fromat", "gsm8k"}}, kWhere); }),
            "config.toml [[reward]] #2: reward type 'math': unknown option 'answer_fromat'; valid options: "
            "answer_format, correct_score, incorrect_score, reference_field (and name, type, weight, clip, center, gate, "
            "gate_min, constraint_max, lambda_init, lambda_lr)");
  EXPECT_EQ(error_of([] { make_reward("length", {{"max_lenght", 10}}, kWhere); }),
            "config.toml [[reward]] #2: reward type 'length': unknown option 'max_lenght'; valid options: "
            "cache_length, coef, max_length, mode, penalty_factor, unit (and name, type, weight, clip, center, gate, "
            "gate_min, constraint_max, lambda_init, lambda_lr)");
}

TEST(RewardRegistry, OptionTypeAndValueErrors) {
  EXPECT_EQ(error_of([] { make_reward("math", {{"correct_score", "1"}}, kWhere); }),
            "config.toml [[reward]] #2: reward type 'math': option 'correct_score' must be a number, got string \"1\"");
  EXPECT_EQ(error_of([] { make_reward("code", {{"workers", 2.5}}, kWhere); }),
            "config.toml [[reward]] #2: reward type 'code': option 'workers' must be an integer, got number 2.5");
  EXPECT_EQ(error_of([] { make_reward("external", {{"command", "python3 scorer.py"}}, kWhere); }),
            "config.toml [[reward]] #2: reward type 'external': option 'command' must be a list of strings, got "
            "string \"python3 scorer.py\"");
  EXPECT_EQ(error_of([] { make_reward("math", {{"answer_format", "latex"}}, kWhere); }),
            "config.toml [[reward]] #2: reward type 'math': option 'answer_format' is 'latex'; use one of: auto, "
            "gsm8k, boxed, answer_is, last_number");
  EXPECT_EQ(error_of([] { make_reward("external", Json::object(), kWhere); }),
            "config.toml [[reward]] #2: reward type 'external': option 'command' is empty; give the scorer's argv, "
            "e.g. command = [\"python3\", \"scorer.py\"]");
  EXPECT_EQ(error_of([] { make_reward("math", Json::array(), kWhere); }),
            "config.toml [[reward]] #2: reward type 'math': options must be a table (JSON object), got array");
}

TEST(RewardRegistry, EveryOptionIsDocumented) {
  // The unknown-option error lists a type's valid options; each must have a row in docs/rewards.md.
  std::string doc = read_file(test::source_path("docs/rewards.md"));
  for (const std::string& type : reward_types()) {
    std::string message = error_of([&] { make_reward(type, {{"no_such_option", 1}}, "t"); });
    size_t begin = message.find("valid options: "), end = message.find(" (and name");
    ASSERT_NE(begin, std::string::npos) << message;
    std::string list = message.substr(begin + 15, end - begin - 15);
    if (list == "(none)") {  // a type without options of its own: its section says so
      EXPECT_NE(doc.find("### `" + type + "`"), std::string::npos) << type << " has no section in docs/rewards.md";
      continue;
    }
    size_t n_options = 0;
    for (size_t at = 0; at <= list.size();) {
      size_t comma = list.find(", ", at);
      std::string key = list.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
      EXPECT_NE(doc.find("| `" + key + "` |"), std::string::npos) << type << " option '" << key << "' is not documented";
      ++n_options;
      if (comma == std::string::npos) break;
      at = comma + 2;
    }
    EXPECT_GE(n_options, 1u) << type;  // the list was parsed
  }
}

TEST(RewardRegistry, SetErrors) {
  EXPECT_EQ(error_of([] { make_reward_set(Json::parse(R"([{"type": "math"}, {"weight": 2}])"), "config.toml"); }),
            "config.toml [[reward]] #2: missing 'type' (a string; one of: bleu, chrf, code, countdown, env, external, format, "
            "keywords, length, majority, math, rouge_l)");
  EXPECT_EQ(error_of([] { make_reward_set(Json::parse(R"([{"type": "math"}, {"type": "math"}])"), "config.toml"); }),
            "config.toml [[reward]] #2: reward set: two rewards are named 'math'; give one of them a different name "
            "= \"...\"");
  EXPECT_EQ(error_of([] { make_reward_set(Json::parse(R"([{"type": "math", "weight": "high"}])"), "config.toml"); }),
            "config.toml [[reward]] #1: 'weight' must be a finite number, got \"high\"");
  EXPECT_EQ(error_of([] { make_reward_set(Json::array(), "config.toml"); }),
            "config.toml: no rewards configured; add at least one [[reward]] table (types: bleu, chrf, code, countdown, env, "
            "external, format, keywords, length, majority, math, rouge_l)");
}

}  // namespace
}  // namespace rlf

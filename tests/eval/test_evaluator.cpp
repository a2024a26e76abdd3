// evaluate_completions on hand-made groups (no model): per-prompt counts,
// pass@k / maj@k from them, rewards, lengths, the accuracy component, the
// "cheating" reward that always says 1, and the JSON outputs.
#include <gtest/gtest.h>

#include "data/synthetic_tasks.h"
#include "eval/evaluator.h"
#include "tests/eval/eval_fixtures.h"
#include "tests/support/test_env.h"
#include "eval/pass_at_k.h"
#include "rewards/registry.h"
#include "util/error.h"

namespace rlf {
namespace {

using test::AlwaysOne;

// A reward with no score for completions containing "skip".
class MissingOnSkip : public Reward {
 public:
  std::string name() const override { return "sometimes"; }
  std::vector<RewardResult> score(const RewardGroup& group) override {
    std::vector<RewardResult> out(group.samples.size());
    for (size_t i = 0; i < out.size(); ++i) {
      if (group.samples[i].completion.find("skip") != std::string::npos) out[i].missing_reason = "skipped";
      else out[i].score = 0.25;
    }
    return out;
  }
};

RewardSample sample(const std::string& text, int64_t n_tokens, const std::string& finish = "stop") {
  RewardSample s;
  s.completion = text;
  s.completion_ids.assign(size_t(n_tokens), 7);
  s.finish_reason = finish;
  return s;
}

std::vector<PromptExample> problems(int64_t n) {
  ArithmeticOptions o;
  o.n_problems = n;
  return generate_arithmetic(o, 11);
}

std::string answer_of(const PromptExample& e, int64_t offset = 0) {
  return std::to_string(std::stoll(e.reference) + offset);
}

// Prompt 0: 3 of 4 correct; prompt 1: 0 of 4 (two wrong answers agree);
// prompt 2: 1 of 4, but the wrong answers form the majority.
std::vector<std::vector<RewardSample>> hand_groups(const std::vector<PromptExample>& ex) {
  return {
      {sample("#### " + answer_of(ex[0]), 3), sample("#### " + answer_of(ex[0]), 5),
       sample("no answer here", 8, "length"), sample("so #### " + answer_of(ex[0]), 4)},
      {sample("#### " + answer_of(ex[1], 1), 2), sample("#### " + answer_of(ex[1], 1), 2),
       sample("#### " + answer_of(ex[1], 2), 2), sample("nothing", 2, "length")},
      {sample("#### " + answer_of(ex[2]), 6), sample("#### " + answer_of(ex[2], 5), 6),
       sample("#### " + answer_of(ex[2], 5), 6), sample("#### " + answer_of(ex[2], 5), 6)},
  };
}

TEST(Evaluator, BestOfNPicksEachPromptsHighestScoredSample) {
  const auto ex = problems(3);
  // "pick" scores 1 for samples that say "sure", 0 otherwise; correctness by the math verifier.
  RewardSet rewards = make_reward_set(Json::parse(R"([{"type": "math", "name": "correct"},
      {"type": "format", "name": "pick", "weight": 0, "pattern": "sure", "match": "search"}])"));
  std::vector<std::vector<RewardSample>> groups = {
      // the first "sure" sample is correct
      {sample("#### " + answer_of(ex[0], 1), 2), sample("sure #### " + answer_of(ex[0]), 2),
       sample("sure #### " + answer_of(ex[0], 3), 2)},
      // the "sure" sample is wrong although two others are right
      {sample("#### " + answer_of(ex[1]), 2), sample("sure #### " + answer_of(ex[1], 2), 2),
       sample("#### " + answer_of(ex[1]), 2)},
      // all tie at 0: the first sample is picked, and it is correct
      {sample("#### " + answer_of(ex[2]), 2), sample("#### " + answer_of(ex[2], 1), 2),
       sample("#### " + answer_of(ex[2], 1), 2)},
  };
  EvalOptions o;
  o.n_samples = 3;
  o.accuracy_reward = "correct";
  o.best_of = "pick";
  EvalResult r = evaluate_completions(ex, groups, rewards, o);
  EXPECT_EQ(r.best_of, "pick");
  EXPECT_NEAR(r.best_of_n, 2.0 / 3.0, 1e-12);
  const Json j = eval_summary_json(r);
  EXPECT_NEAR(j["best_of_n"].get<double>(), 2.0 / 3.0, 1e-12);
  EXPECT_EQ(j["best_of"], "pick");
  // Without best_of the summary has no such key; an unknown component is an error naming the option.
  o.best_of = "";
  EXPECT_FALSE(eval_summary_json(evaluate_completions(ex, groups, rewards, o)).contains("best_of_n"));
  o.best_of = "rm";
  EXPECT_NE(test::error_of([&] { evaluate_completions(ex, groups, rewards, o); })
                .find("eval option best_of = \"rm\" names no [[reward]] component (components: correct, pick)"),
            std::string::npos);
}

TEST(Evaluator, CountsAndMetricsFromHandMadeGroups) {
  const auto ex = problems(3);
  RewardSet rewards = make_reward_set(Json::parse(R"([{"type": "math", "name": "correct"}])"));
  EvalOptions o;
  o.n_samples = 4;
  EvalResult r = evaluate_completions(ex, hand_groups(ex), rewards, o);

  ASSERT_EQ(r.prompts.size(), 3u);
  EXPECT_EQ(r.prompts[0].n_correct, 3);
  EXPECT_EQ(r.prompts[1].n_correct, 0);
  EXPECT_EQ(r.prompts[2].n_correct, 1);
  EXPECT_EQ(r.n_prompts, 3);
  EXPECT_EQ(r.n_samples, 4);
  EXPECT_EQ(r.accuracy_reward, "correct");
  EXPECT_EQ(r.temperature, 1.0);  // auto with n = 4

  // pass@k = mean over prompts of 1 - C(n-c,k)/C(n,k)
  ASSERT_EQ(r.pass_at_k.size(), 3u);  // k = 1, 2, 4
  EXPECT_NEAR(r.pass_at_k.at(1), (3.0 / 4 + 0 + 1.0 / 4) / 3, 1e-12);
  EXPECT_NEAR(r.pass_at_k.at(2), ((1 - 0.0 / 6) + 0 + (1 - 3.0 / 6)) / 3, 1e-12);
  EXPECT_NEAR(r.pass_at_k.at(4), (1.0 + 0 + 1.0) / 3, 1e-12);

  // maj@2: prompt 0 blocks [c,c] [none,c] -> 1, 1; prompt 1 -> 0, 0; prompt 2 [c,w] tie -> c, [w,w] -> w.
  // maj@4: prompt 0 -> 1; prompt 1 -> wrong; prompt 2 -> the three wrong win.
  ASSERT_EQ(r.maj_at_k.size(), 2u);  // k = 2, 4
  EXPECT_NEAR(r.maj_at_k.at(2), (1.0 + 0 + 0.5) / 3, 1e-12);
  EXPECT_NEAR(r.maj_at_k.at(4), 1.0 / 3, 1e-12);

  EXPECT_NEAR(r.mean_reward, 4.0 / 12, 1e-12);
  ASSERT_EQ(r.components.size(), 1u);
  EXPECT_NEAR(r.components[0].mean, 4.0 / 12, 1e-12);
  EXPECT_EQ(r.n_completion_tokens, 3 + 5 + 8 + 4 + 8 + 24);
  EXPECT_NEAR(r.mean_completion_tokens, 52.0 / 12, 1e-12);
  EXPECT_NEAR(r.truncated_fraction, 2.0 / 12, 1e-12);
  EXPECT_EQ(r.tokens_per_s, 0.0);  // nothing generated

  const EvalSample& s = r.prompts[0].samples[0];
  EXPECT_TRUE(s.correct);
  EXPECT_EQ(s.answer, answer_of(ex[0]));
  EXPECT_EQ(s.reward, 1.0);
  EXPECT_EQ(s.explanation, "correct=1 (correct: expected " + answer_of(ex[0]) + ", got " + answer_of(ex[0]) + ")");
  EXPECT_FALSE(r.prompts[0].samples[2].answer.has_value());
}

TEST(Evaluator, CheatingRewardGivesPassOne) {
  const auto ex = problems(3);
  RewardSet rewards;
  rewards.add("cheat", 1.0, std::make_unique<AlwaysOne>());
  EvalOptions o;
  o.n_samples = 4;
  EvalResult r = evaluate_completions(ex, hand_groups(ex), rewards, o);
  for (const auto& [k, v] : r.pass_at_k) EXPECT_EQ(v, 1.0) << k;
  EXPECT_EQ(r.mean_reward, 1.0);
  // maj@4: the winner's first member is always "correct" under this reward.
  EXPECT_EQ(r.maj_at_k.at(4), 1.0);
}

TEST(Evaluator, AccuracyComponentThresholdAndMissingScores) {
  const auto ex = problems(1);
  RewardSet rewards;
  rewards.add("correct", 1.0, make_reward("math", Json::object(), "test"));
  rewards.add("sometimes", 2.0, std::make_unique<MissingOnSkip>());
  std::vector<std::vector<RewardSample>> groups = {
      {sample("#### " + answer_of(ex[0]), 1), sample("skip #### " + answer_of(ex[0]), 1)}};
  EvalOptions o;
  o.n_samples = 2;
  o.temperature = 0.7;

  // Correctness from "correct" (the first component).
  EvalResult r = evaluate_completions(ex, groups, rewards, o);
  EXPECT_EQ(r.prompts[0].n_correct, 2);
  EXPECT_EQ(r.temperature, 0.7);
  EXPECT_EQ(r.prompts[0].samples[0].reward, 1.0 + 2 * 0.25);
  EXPECT_EQ(r.prompts[0].samples[1].reward, 1.0);  // the missing component is skipped
  EXPECT_EQ(r.components[1].n_missing, 1);
  EXPECT_EQ(r.n_reward_missing, 0);

  // Correctness from "sometimes": 0.25 is not above 0.5; a missing score is not correct.
  o.accuracy_reward = "sometimes";
  r = evaluate_completions(ex, groups, rewards, o);
  EXPECT_EQ(r.prompts[0].n_correct, 0);
  o.correct_threshold = 0.2;
  r = evaluate_completions(ex, groups, rewards, o);
  EXPECT_EQ(r.prompts[0].n_correct, 1);

  o.accuracy_reward = "corect";
  try {
    evaluate_completions(ex, groups, rewards, o);
    FAIL();
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(),
                 "eval option accuracy_reward = \"corect\" names no [[reward]] component (components: correct, "
                 "sometimes)");
  }
}

TEST(Evaluator, RejectsWrongGroupSizes) {
  const auto ex = problems(1);
  RewardSet rewards = make_reward_set(Json::parse(R"([{"type": "math"}])"));
  EvalOptions o;
  o.n_samples = 3;
  try {
    evaluate_completions(ex, {{sample("#### 1", 1)}}, rewards, o);
    FAIL();
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "arithmetic #0: 1 completions for a prompt, expected n_samples = 3");
  }
}

TEST(Evaluator, JsonOutputs) {
  const auto ex = problems(3);
  RewardSet rewards = make_reward_set(Json::parse(R"([{"type": "math", "name": "correct"}])"));
  EvalOptions o;
  o.n_samples = 4;
  EvalResult r = evaluate_completions(ex, hand_groups(ex), rewards, o);
  Json j = eval_summary_json(r);
  for (const char* key : {"pass@1", "pass@2", "pass@4", "maj@2", "maj@4", "mean_reward", "reward/correct", "n_prompts",
                          "n_samples", "wall_s", "tokens_per_s", "truncated_fraction", "mean_completion_tokens"})
    EXPECT_TRUE(j.contains(key)) << key;
  EXPECT_FALSE(j.contains("maj@1"));
  EXPECT_EQ(j["n_prompts"], 3);
  EXPECT_EQ(j["pass@1"].get<double>(), r.pass_at_k.at(1));

  Json line = prompt_result_json(r.prompts[0], r.component_names);
  EXPECT_EQ(line["id"], ex[0].id);
  EXPECT_EQ(line["n_correct"], 3);
  EXPECT_EQ(line["n_samples"], 4);
  ASSERT_EQ(line["samples"].size(), 4u);
  EXPECT_EQ(line["samples"][0]["scores"]["correct"], 1.0);
  EXPECT_EQ(line["samples"][2]["answer"], nullptr);
  EXPECT_EQ(line["samples"][2]["finish_reason"], "length");

  const std::string report = format_eval_report(r);
  EXPECT_NE(report.find("pass@4"), std::string::npos) << report;
  EXPECT_NE(report.find("correct (accuracy)"), std::string::npos) << report;
}

}  // namespace
}  // namespace rlf

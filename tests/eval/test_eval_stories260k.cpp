// End to end on the real stories260K model (llama2.c, 260K parameters) with
// synthetic arithmetic prompts and the math reward. The model cannot do
// arithmetic, so scores are ~0: the test checks structure, determinism by
// seed (also across generation chunks), monotone pass@k, the cheating reward,
// the config path with an eval split, and the details JSONL.
#include <gtest/gtest.h>

#include "data/prompt_dataset.h"
#include "eval/eval_config.h"
#include "eval/evaluator.h"
#include "tests/eval/eval_fixtures.h"
#include "rewards/registry.h"
#include "tests/net/chat_stub.h"
#include "tests/support/test_env.h"
#include "util/fs.h"

namespace rlf {
namespace {

using test::AlwaysOne;

std::filesystem::path model_path() { return test::shared_path("models/stories260K/stories260K.bin"); }

class EvalStories : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    policy_ = new Policy(load_policy(model_path(), "", LoadOptions{}));
    PromptDatasetOptions d;
    d.preset = "arithmetic";
    d.arithmetic.n_problems = 8;
    d.seed = 3;
    examples_ = new std::vector<PromptExample>(PromptDataset::load(d).train());
  }
  static void TearDownTestSuite() {
    delete policy_;
    delete examples_;
  }
  static EvalOptions options() {
    EvalOptions o;
    o.n_samples = 4;
    o.max_new_tokens = 16;
    o.max_prompts = 6;
    o.seed = 5;
    return o;
  }
  static std::vector<std::string> texts(const EvalResult& r) {
    std::vector<std::string> out;
    for (const auto& p : r.prompts)
      for (const auto& s : p.samples) out.push_back(s.text);
    return out;
  }
  static Policy* policy_;
  static std::vector<PromptExample>* examples_;
};
Policy* EvalStories::policy_ = nullptr;
std::vector<PromptExample>* EvalStories::examples_ = nullptr;

TEST_F(EvalStories, StructureAndMetrics) {
  RewardSet rewards = make_reward_set(Json::parse(R"([{"type": "math"}])"));
  EvalResult r = evaluate(*policy_, *examples_, rewards, options());
  EXPECT_EQ(r.n_prompts, 6);  // max_prompts
  EXPECT_EQ(r.n_samples, 4);
  EXPECT_EQ(r.temperature, 1.0);
  ASSERT_EQ(r.prompts.size(), 6u);
  int64_t n_tokens = 0, n_length = 0, n_rewarded = 0, n_correct_all = 0;
  double reward_sum = 0;
  for (size_t i = 0; i < r.prompts.size(); ++i) {
    const PromptResult& p = r.prompts[i];
    EXPECT_EQ(p.id, (*examples_)[i].id);
    EXPECT_EQ(p.prompt, (*examples_)[i].prompt);
    ASSERT_EQ(p.samples.size(), 4u);
    int64_t n_correct = 0;
    for (const EvalSample& s : p.samples) {
      n_tokens += s.n_tokens;
      n_length += s.finish_reason == "length";
      if (s.reward) reward_sum += *s.reward, ++n_rewarded;
      EXPECT_GE(s.n_tokens, 1);
      EXPECT_LE(s.n_tokens, 16);
      EXPECT_TRUE(s.finish_reason == "stop" || s.finish_reason == "length") << s.finish_reason;
      EXPECT_EQ(s.finish_reason == "length", s.n_tokens == 16);
      ASSERT_EQ(s.scores.size(), 1u);
      ASSERT_TRUE(s.scores[0].has_value());  // math scores everything (0 when no answer)
      n_correct += s.correct;
    }
    EXPECT_EQ(p.n_correct, n_correct);
    n_correct_all += n_correct;
  }
  ASSERT_EQ(r.pass_at_k.size(), 3u);  // 1, 2, 4
  EXPECT_NEAR(r.pass_at_k.at(1), static_cast<double>(n_correct_all) / 24.0, 1e-12);  // pass@1 = c / n, averaged
  EXPECT_LE(r.pass_at_k.at(1), r.pass_at_k.at(2));
  EXPECT_LE(r.pass_at_k.at(2), r.pass_at_k.at(4));
  EXPECT_EQ(r.maj_at_k.size(), 2u);  // 2, 4
  // The aggregates are those of the 24 samples listed above.
  ASSERT_EQ(n_rewarded, 24);  // math scores everything
  EXPECT_NEAR(r.mean_reward, reward_sum / 24.0, 1e-12);
  EXPECT_EQ(r.n_completion_tokens, n_tokens);
  EXPECT_NEAR(r.truncated_fraction, static_cast<double>(n_length) / 24.0, 1e-12);
  EXPECT_GT(r.generate_s, 0.0);
  EXPECT_NEAR(r.tokens_per_s, static_cast<double>(n_tokens) / r.generate_s, 1e-9 * r.tokens_per_s);
  std::cout << format_eval_report(r);
}

TEST_F(EvalStories, DeterministicBySeedAndIndependentOfChunks) {
  RewardSet rewards = make_reward_set(Json::parse(R"([{"type": "math"}])"));
  EvalOptions o = options();
  const auto a = texts(evaluate(*policy_, *examples_, rewards, o));
  const auto b = texts(evaluate(*policy_, *examples_, rewards, o));
  EXPECT_EQ(a, b);

  o.prompts_per_call = 4;  // chunks of 4 and 2 prompts
  o.max_batch_rows = 5;
  std::vector<std::pair<int64_t, int64_t>> calls;
  const auto c = texts(evaluate(*policy_, *examples_, rewards, o, [&](int64_t done, int64_t total) {
    calls.emplace_back(done, total);
  }));
  EXPECT_EQ(a, c);
  EXPECT_EQ(calls, (std::vector<std::pair<int64_t, int64_t>>{{4, 6}, {6, 6}}));

  o = options();
  o.seed = 6;
  EXPECT_NE(a, texts(evaluate(*policy_, *examples_, rewards, o)));
}

TEST_F(EvalStories, GreedySingleSample) {
  RewardSet rewards = make_reward_set(Json::parse(R"([{"type": "math"}])"));
  EvalOptions o = options();
  o.n_samples = 1;
  EvalResult r = evaluate(*policy_, *examples_, rewards, o);
  EXPECT_EQ(r.temperature, 0.0);
  EXPECT_EQ(r.pass_at_k.size(), 1u);
  EXPECT_TRUE(r.maj_at_k.empty());
  o.seed = 99;  // greedy: the seed does not matter
  EXPECT_EQ(texts(r), texts(evaluate(*policy_, *examples_, rewards, o)));
}

TEST_F(EvalStories, CheatingRewardScoresEverything) {
  RewardSet rewards;
  rewards.add("cheat", 1.0, std::make_unique<AlwaysOne>());
  EvalResult r = evaluate(*policy_, *examples_, rewards, options());
  EXPECT_EQ(r.pass_at_k.at(1), 1.0);
  EXPECT_EQ(r.pass_at_k.at(4), 1.0);
  EXPECT_EQ(r.mean_reward, 1.0);
}

TEST_F(EvalStories, RunFromConfigUsesTheEvalSplitAndWritesDetails) {
  Json cfg = {{"model", {{"path", model_path().string()}}},
              {"data", {{"preset", "arithmetic"}, {"arithmetic", {{"n_problems", 20}}}, {"eval_size", 3}}},
              {"eval", {{"n_samples", 2}, {"max_new_tokens", 8}}},
              {"grpo", {{"group_size", 8}}}};  // a training section: ignored
  EvalConfig config = eval_config_from_json(cfg, "run.toml");
  EvalRun run = run_eval(config);
  EXPECT_EQ(run.result.n_prompts, 3);
  EXPECT_EQ(run.result.component_names, std::vector<std::string>{"math"});  // the preset's default
  EXPECT_NE(run.data_summary.find("3 eval"), std::string::npos) << run.data_summary;

  test::TempDir dir;
  write_eval_details(dir / "details.jsonl", run.result);
  const auto lines = split_lines(read_file(dir / "details.jsonl"));
  ASSERT_EQ(lines.size(), 3u);
  Json first = Json::parse(lines[0]);
  EXPECT_EQ(first["n_samples"], 2);
  EXPECT_EQ(first["samples"].size(), 2u);
  EXPECT_TRUE(first["samples"][0].contains("text"));
}

TEST_F(EvalStories, AJudgeWithItsApiKeyFromTheEnvironmentPicksTheBestOfN) {
  test::StubServer server;  // echoes nothing useful: every verdict is "Score: 3" on [0, 4]
  Json cfg = {{"model", {{"path", model_path().string()}}},
              {"data", {{"preset", "arithmetic"}, {"arithmetic", {{"n_problems", 12}}}, {"eval_size", 2}}},
              {"reward", Json::array({{{"type", "math"}, {"name", "correct"}},
                                      {{"type", "judge"},
                                       {"name", "judge"},
                                       {"weight", 0.0},
                                       {"base_url", server.base_url()},
                                       {"model", "stub"},
                                       {"api_key_env", "RLF_TEST_JUDGE_KEY"},
                                       {"rubric", "MODE: reply:Score:_3"},
                                       {"max_score", 4.0}}})},
              {"eval", {{"n_samples", 2}, {"max_new_tokens", 6}, {"best_of", "judge"}, {"accuracy_reward", "correct"}}}};
  EvalConfig config = eval_config_from_json(cfg, "run.toml");
  ReadEnvironment env = [](const std::string& name) -> std::optional<std::string> {
    return name == "RLF_TEST_JUDGE_KEY" ? std::optional<std::string>("k") : std::nullopt;
  };
  EvalRun run = run_eval(config, nullptr, env);
  const Json j = eval_summary_json(run.result);
  EXPECT_DOUBLE_EQ(j["reward/judge"].get<double>(), 0.75);  // 3 on [0, 4] for every sample
  EXPECT_EQ(j["best_of"], "judge");
  // Every sample ties, so each prompt's pick is its first sample.
  double first_correct = 0;
  for (const PromptResult& p : run.result.prompts) first_correct += p.samples.at(0).correct ? 0.5 : 0.0;
  EXPECT_DOUBLE_EQ(j["best_of_n"].get<double>(), first_correct);
  EXPECT_EQ(server.count(), 4);  // 2 prompts x 2 samples
  // Without the variable the run stops before loading anything.
  EXPECT_NE(test::error_of([&] { run_eval(config); }).find("RLF_TEST_JUDGE_KEY, which is not set"), std::string::npos);
}

TEST_F(EvalStories, TheEvaluatedPolicysSelfCertaintyPicksTheBestOfN) {
  Json cfg = {{"model", {{"path", model_path().string()}}},
              {"data", {{"preset", "arithmetic"}, {"arithmetic", {{"n_problems", 12}}}, {"eval_size", 3}}},
              {"reward", Json::array({{{"type", "math"}, {"name", "correct"}},
                                      {{"type", "self_certainty"}, {"name", "sc"}, {"weight", 0.0}}})},
              {"eval", {{"n_samples", 4}, {"max_new_tokens", 6}, {"best_of", "sc"}, {"accuracy_reward", "correct"}}}};
  EvalRun run = run_eval(eval_config_from_json(cfg, "run.toml"));
  const Json j = eval_summary_json(run.result);
  EXPECT_GT(j["reward/sc"].get<double>(), 0.0);
  // The pick is each prompt's most self-certain sample (the first of ties).
  double picked_correct = 0;
  for (const PromptResult& p : run.result.prompts) {
    size_t best = 0;
    for (size_t k = 0; k < p.samples.size(); ++k) {
      ASSERT_TRUE(p.samples[k].scores.at(1).has_value());
      if (*p.samples[k].scores[1] > *p.samples[best].scores[1]) best = k;
    }
    picked_correct += p.samples[best].correct ? 1.0 / 3.0 : 0.0;
  }
  EXPECT_NEAR(j["best_of_n"].get<double>(), picked_correct, 1e-12);
}

}  // namespace
}  // namespace rlf

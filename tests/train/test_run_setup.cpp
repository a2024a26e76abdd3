// One run set-up for every entry point (setup/run_setup.h): from one config,
// `rlf train` (RunContext), `rlf reflexion` (load_run_setup of
// reflexion_spec_of, as apps/cli/cmd_reflexion.cpp loads it) and `rlf eval`
// (run_eval's load_run_setup of run_spec_of) build the same reward set — the
// self-certainty reward included, which `rlf reflexion` once could not build —
// bound to the policy each loaded, and check records by one rule.
#include <gtest/gtest.h>

#include "eval/eval_config.h"
#include "setup/run_setup.h"
#include "tests/train/run_fixtures.h"
#include "train/run_context.h"

namespace rlf {
namespace {

Json run_config(const fs::path& out) {
  return {{"model", {{"random_init", "demo"}}},
          {"run", {{"out_dir", out.string()}}},
          {"rollout", {{"max_new_tokens", 16}}},
          {"data", {{"preset", "arithmetic"}, {"eval_size", 4}, {"arithmetic", {{"n_problems", 12}}}}},
          {"reward", Json::array({{{"type", "math"}, {"name", "correct"}, {"answer_format", "gsm8k"}},
                                  {{"type", "self_certainty"}, {"weight", 0.5}}})}};
}

// Each component's name, type and weight, and its scores of `g`.
Json described(RewardSet& rewards, const RewardGroup& g) {
  Json out = Json::array();
  const GroupScores scores = rewards.score(g);
  for (size_t c = 0; c < rewards.components().size(); ++c) {
    const RewardComponent& rc = rewards.components()[c];
    Json s = Json::array();
    for (const RewardResult& r : scores.results[c]) s.push_back(r.score ? Json(*r.score) : Json(nullptr));
    out.push_back({{"name", rc.name}, {"type", rc.reward->name()}, {"weight", rc.weight}, {"scores", s}});
  }
  return out;
}

// One prompt of the data set and two answers, as token ids of `policy`.
RewardGroup group_of(const PromptExample& task, Policy& policy) {
  RewardGroup g;
  g.prompt = task.prompt;
  g.reference = task.reference;
  g.record = task.record;
  g.max_new_tokens = 8;
  for (const std::string& answer : std::vector<std::string>{" #### " + task.reference, " #### -1"}) {
    RewardSample s;
    s.completion = answer;
    s.prompt_ids = policy.tokenizer->encode(task.prompt, true);
    s.completion_ids = policy.tokenizer->encode(answer, false);
    g.samples.push_back(s);
  }
  return g;
}

TEST(RunSetup, TrainReflexionAndEvalBuildTheSameRewardsFromOneConfig) {
  test::TempDir dir;
  const Json config = run_config(dir / "run");
  const TrainConfig cfg = train_config_from_json(config, "run.toml");
  LocalReducer one_process;
  const TrainRunOptions opts = test::quiet_run();
  RunContext train = load_run_context(cfg, opts, one_process);  // writes the demo policy
  load_rewards_and_env(train);
  load_prompts_and_sft_pairs(train);

  RunSetup reflexion = load_run_setup(reflexion_spec_of(cfg));  // as rlf reflexion loads it

  Json eval_json = config;  // rlf eval --config on the same file, at the policy train wrote
  eval_json["model"]["path"] = cfg.model_path().string();
  RunSetup eval = load_run_setup(run_spec_of(eval_config_from_json(eval_json, "run.toml")));

  const RewardGroup g = group_of(train.eval.at(0), train.policy);
  const Json expected = described(train.rewards, g);
  ASSERT_EQ(expected.size(), 2u) << expected.dump();
  EXPECT_EQ(expected[1]["type"], "self_certainty");
  EXPECT_EQ(expected[0]["scores"], Json::array({1.0, 0.0})) << expected.dump();
  EXPECT_TRUE(expected[1]["scores"][0].is_number()) << expected.dump();
  EXPECT_EQ(described(reflexion.rewards, g), expected);
  EXPECT_EQ(described(eval.rewards, g), expected);
  // The same data set and split, and the same environment.
  EXPECT_EQ(reflexion.data->eval().size(), train.eval.size());
  EXPECT_EQ(eval_split(*eval.data).at(0).prompt, train.eval.at(0).prompt);
  EXPECT_EQ(eval.env->name(), train.env->name());
}

// rollout.train_prompts: RL's prompts are the first N of the training split
// (the held-out split untouched), so a run's tasks come back every epoch.
TEST(RunSetup, TrainPromptsKeepsTheFirstNTrainingPrompts) {
  test::TempDir dir;
  auto load = [&](int64_t n) {
    Json config = run_config(dir / ("run" + std::to_string(n)));
    config["rollout"]["train_prompts"] = n;
    const TrainConfig cfg = train_config_from_json(config, "run.toml");  // the context keeps a reference
    LocalReducer one_process;
    RunContext r = load_run_context(cfg, test::quiet_run(), one_process);
    load_rewards_and_env(r);
    load_prompts_and_sft_pairs(r);
    return std::make_pair(r.train, r.eval);
  };
  const auto [all_train, all_eval] = load(0);
  ASSERT_EQ(all_train.size(), 8u);  // 12 problems, 4 held out
  const auto [train, eval] = load(3);
  ASSERT_EQ(train.size(), 3u);
  for (size_t i = 0; i < train.size(); ++i) EXPECT_EQ(train[i].prompt, all_train[i].prompt) << i;
  ASSERT_EQ(eval.size(), all_eval.size());
  for (size_t i = 0; i < eval.size(); ++i) EXPECT_EQ(eval[i].prompt, all_eval[i].prompt) << i;
  EXPECT_EQ(load(100).first.size(), 8u);  // more than there are: all of them
  EXPECT_EQ(test::error_of([&] { load(-1); }),
            "run.toml: key 'rollout.train_prompts' must be in [0, 1000000000000], got -1");
}

TEST(RunSetup, RecordChecksAndTheEnvRewardAreOneRule) {
  // A guessing game gives rewards: every entry point adds it as the component "env", once.
  const EnvConfig guess = env_config_from_json({{"type", "guess"}, {"weight", 0.25}}, "run.toml [env]");
  const RewardFactories none = run_reward_factories({}, std::make_shared<CausalLM>(nullptr));
  RunRewards r = make_run_rewards(Json::array({{{"type", "math"}}}), guess, "run.toml", none);
  ASSERT_EQ(r.rewards.size(), 2u);
  EXPECT_EQ(r.rewards.components()[1].name, "env");
  EXPECT_EQ(r.rewards.components()[1].weight, 0.25);
  RunRewards named = make_run_rewards(Json::array({{{"type", "env"}, {"name", "game"}}}), guess, "run.toml", none);
  EXPECT_EQ(named.rewards.size(), 1u);
  // A record the rewards cannot score fails by name before anything runs.
  PromptExample bad;
  bad.prompt = "Say hi";
  bad.where = "data.jsonl line 3";
  RunRewards math = make_run_rewards(Json::array({{{"type", "math"}}}), EnvConfig{}, "run.toml", none);
  const std::string error = test::error_of([&] { check_records({bad}, math.rewards, math.env.get()); });
  EXPECT_NE(error.find("data.jsonl line 3"), std::string::npos) << error;
}

}  // namespace
}  // namespace rlf

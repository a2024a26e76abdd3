// The built-in environments step by step (no model): the single-turn
// environment, the calculator tool (calls, results, errors, the call limit)
// and the guessing game (replies, rewards, record checks), and the [env]
// table's parsing and errors.
#include <gtest/gtest.h>

#include "env/calculator_env.h"
#include "env/env_registry.h"
#include "env/guess_env.h"
#include "env/reflect_retry_env.h"
#include "env/try_again_env.h"
#include "env/single_turn_env.h"
#include "tests/support/test_env.h"

namespace rlf {
namespace {

using test::error_of;

PromptExample task(const std::string& prompt, Json record = Json::object()) {
  PromptExample t;
  t.id = "t";
  t.prompt = prompt;
  t.record = std::move(record);
  t.where = "tasks.jsonl line 3";
  return t;
}

PolicyTurn turn(const std::string& text, const std::string& stop = "eos", int64_t k = 0) {
  PolicyTurn t;
  t.turn = k;
  t.text = text;
  t.stop = stop;
  return t;
}

TEST(Episode, TranscriptsShowTheStopStringsThePolicyWrote) {
  Episode e = Episode::single_turn(0, {1, 2}, {3, 4, 5}, {-1.f, -1.f, -1.f});
  e.segments[1].text = "<calc>1+1";
  e.segments[1].stop = "</calc>";
  Segment obs;
  obs.role = SegmentRole::Observation;
  obs.begin = obs.end = 5;
  obs.text = "<result>2</result>";
  e.segments.push_back(obs);
  EXPECT_EQ(e.transcript(), "<calc>1+1</calc><result>2</result>");
  e.segments[1].stop = "eos";
  EXPECT_EQ(e.transcript(), "<calc>1+1<result>2</result>");
  e.segments[1].stop = "id:7";
  EXPECT_EQ(e.segments[1].written(), "<calc>1+1");
}

TEST(SingleTurnEnv, ThePromptThenDone) {
  SingleTurnEnvironment env;
  std::string first;
  auto s = env.reset(task("What is 2 + 2?"), 1, &first);
  EXPECT_EQ(first, "What is 2 + 2?");
  EnvStep st = s->step(turn("#### 4"));
  EXPECT_TRUE(st.done);
  EXPECT_FALSE(st.reward);
  EXPECT_TRUE(env.single_turn());
  EXPECT_FALSE(env.gives_rewards());
}

TEST(CalculatorEnv, CallsResultsErrorsAndTheCallLimit) {
  CalculatorOptions o;
  o.max_calls = 2;
  CalculatorEnvironment env(o);
  EXPECT_EQ(env.turn_stops(), std::vector<std::string>{"</calc>"});
  std::string first;
  auto s = env.reset(task("What is 347 * 58?"), 0, &first);
  EXPECT_EQ(first, "What is 347 * 58?");
  // The engine stops at the closing tag: the turn's text excludes it, `stop` names it.
  EnvStep a = s->step(turn("Let me compute. <calc>347*58", "</calc>"));
  EXPECT_FALSE(a.done);
  EXPECT_TRUE(a.tool_call);
  EXPECT_FALSE(a.tool_error);
  EXPECT_EQ(a.observation, "<result>20126</result>");
  EnvStep b = s->step(turn("<calc>(7 + 1) / 0</calc>", "eos", 1));
  EXPECT_TRUE(b.tool_error);
  EXPECT_EQ(b.observation, "<result>error: division by zero</result>");
  EnvStep c = s->step(turn("<calc>1+1</calc>", "</calc>", 2));
  EXPECT_TRUE(c.done) << "a third call is over max_calls = 2";
  EXPECT_TRUE(c.tool_error);
  // A turn without a call is the answer: the episode ends.
  auto s2 = env.reset(task("x"), 0, &first);
  EnvStep d = s2->step(turn(" #### 20126"));
  EXPECT_TRUE(d.done);
  EXPECT_FALSE(d.tool_call);
  // An unclosed call that did not end at the tag is not a call.
  EXPECT_TRUE(s2->step(turn("<calc>3*4 and then")).done);
  EXPECT_EQ(env.call("7/2", &b.tool_error), "<result>7/2</result>");
  EXPECT_EQ(env.call("2*(3+4)", &b.tool_error), "<result>14</result>");
  EXPECT_EQ(env.call("2+", &b.tool_error), "<result>error: unexpected end of expression</result>");
  EXPECT_TRUE(b.tool_error);
}

TEST(GuessEnv, RepliesRewardsAndRecordChecks) {
  GuessOptions o;
  o.turn_penalty = 0.1;
  GuessEnvironment env(o);
  EXPECT_TRUE(env.gives_rewards());
  PromptExample t = task("Guess", {{"secret", 11}, {"low", 1}, {"high", 16}});
  env.check_record(t);
  std::string first;
  auto s = env.reset(t, 5, &first);
  EnvStep a = s->step(turn("8"));
  EXPECT_FALSE(a.done);
  EXPECT_EQ(a.observation, " Higher. ");
  EXPECT_DOUBLE_EQ(*a.reward, -0.1);
  EXPECT_EQ(s->step(turn("My guess is 13.")).observation, " Lower. ");
  EXPECT_EQ(s->step(turn("hmm")).observation, " Say a number. ");
  EnvStep w = s->step(turn("11"));
  EXPECT_TRUE(w.done);
  EXPECT_DOUBLE_EQ(*w.reward, 1.0);
  EXPECT_EQ(error_of([&] { env.check_record(task("g", {{"secret", 20}, {"low", 1}, {"high", 16}})); }),
            "tasks.jsonl line 3: 'secret' 20 is outside [low, high] = [1, 16]");
  EXPECT_EQ(error_of([&] { env.check_record(task("g", {{"low", 1}, {"high", 16}})); }),
            "tasks.jsonl line 3: the guess environment needs an integer 'secret' in the record (use the data preset "
            "\"guess\")");
  GuessOptions bad;
  bad.turn_penalty = -1;
  EXPECT_EQ(error_of([&] { GuessEnvironment e(bad); }), "env.turn_penalty must be >= 0 (got -1)");
}

// "Try again": a wrong answer gets the message as feedback and costs the
// penalty; a right one ends the episode. The verifier is a reward table.
TEST(TryAgainEnv, FeedbackOnWrongAnswersUntilRight) {
  TryAgainOptions o;
  o.turn_penalty = 0.25;
  TryAgainEnvironment env(o, "run.toml [env]");
  EXPECT_TRUE(env.gives_rewards());
  PromptExample t = task("What is 2+2?");
  t.reference = "4";
  std::string first;
  auto s = env.reset(t, 0, &first);
  EXPECT_EQ(first, "What is 2+2?");
  EnvStep a = s->step(turn(" 2 + 2 = 5. #### 5"));
  EXPECT_FALSE(a.done);
  EXPECT_TRUE(a.observation_is_feedback);
  EXPECT_EQ(a.observation, "\nThat is not right. Try again.\n");
  EXPECT_EQ(a.reward, std::optional<double>(-0.25));
  EXPECT_EQ(a.turn_weight, 1.0f);
  EXPECT_EQ(a.feedback, "expected 4, got 5");
  EXPECT_EQ(a.correct, std::optional<bool>(false));
  EnvStep b = s->step(turn(" 2 + 2 = 4. #### 4", "eos", 1));
  EXPECT_TRUE(b.done);
  EXPECT_EQ(b.correct, std::optional<bool>(true));
  EXPECT_FALSE(b.reward);
  // No penalty: no rewards of its own.
  EXPECT_FALSE(TryAgainEnvironment({}, "w").gives_rewards());
  EnvConfig c = env_config_from_json({{"type", "try_again"}, {"turn_penalty", 0.1}, {"message", "No."},
                                      {"verifier", {{"type", "math"}, {"answer_format", "boxed"}}}}, "w");
  EXPECT_TRUE(c.gives_rewards);
  EXPECT_EQ(make_environment(c, "w")->name(), "try_again");
  EXPECT_NE(error_of([] { env_config_from_json({{"type", "try_again"}, {"verifier", {{"type", "math"}, {"answer", 1}}}}, "w"); })
                .find("unknown option 'answer'"),
            std::string::npos);
  EXPECT_EQ(error_of([] { env_config_from_json({{"type", "try_again"}, {"turn_penalty", -1}}, "w"); }),
            "w: environment type 'try_again': option 'turn_penalty' must be >= 0 (got -1)");
}

// Reflect, retry, reward: answer -> reflection -> retry; only the reflection
// carries loss (train = "reflection"); a right first answer ends it.
TEST(ReflectRetryEnv, AnswerReflectionRetryWithTheReflectionTrained) {
  ReflectRetryEnvironment env({}, "w");
  PromptExample t = task("What is 2+2?");
  t.reference = "4";
  std::string first;
  auto s = env.reset(t, 0, &first);
  EnvStep a = s->step(turn(" #### 5"));
  EXPECT_FALSE(a.done);
  EXPECT_EQ(a.turn_weight, 0.0f);
  EXPECT_EQ(a.observation, "\nThat is not right. Think about what went wrong.\n");
  EXPECT_EQ(a.correct, std::optional<bool>(false));
  EnvStep r = s->step(turn(" I added wrong.", "eos", 1));
  EXPECT_FALSE(r.done);
  EXPECT_EQ(r.turn_weight, 1.0f);
  EXPECT_EQ(r.observation, "\nNow answer again.\n");
  EXPECT_FALSE(r.correct);  // a reflection is not an answer
  EnvStep b = s->step(turn(" #### 4", "eos", 2));
  EXPECT_TRUE(b.done);
  EXPECT_EQ(b.turn_weight, 0.0f);
  EXPECT_EQ(b.correct, std::optional<bool>(true));
  EXPECT_FALSE(b.reward);  // no reflection bonus by default
  EXPECT_FALSE(env.gives_rewards());
  // Right at once: done, nothing trained.
  auto s2 = env.reset(t, 0, &first);
  EnvStep c = s2->step(turn(" #### 4"));
  EXPECT_TRUE(c.done);
  EXPECT_EQ(c.turn_weight, 0.0f);
  ReflectRetryOptions all;
  all.train = "all";
  ReflectRetryEnvironment env_all(all, "w");  // sessions borrow their environment: it must outlive them
  auto s3 = env_all.reset(t, 0, &first);
  EXPECT_EQ(s3->step(turn(" #### 5")).turn_weight, 1.0f);
  EXPECT_EQ(error_of([] { env_config_from_json({{"type", "reflect_retry"}, {"max_turns", 2}}, "w"); }),
            "w: environment type 'reflect_retry': option 'max_turns' must be >= 3 (answer, reflection, retry), got 2");
  EXPECT_EQ(error_of([] { env_config_from_json({{"type", "reflect_retry"}, {"train", "answers"}}, "w"); }),
            "w: environment type 'reflect_retry': option 'train' must be \"reflection\" or \"all\" (got \"answers\")");
}

// The reflection-quality bonus (SRPO-style; docs/feedback.md), by hand:
// bonus = w * (concise + novel) / 2, only when the retry is right.
TEST(ReflectRetryEnv, ReflectionQualityBonusByHand) {
  ReflectRetryOptions o;
  o.reflection_bonus = 0.4;
  o.reflection_target_chars = 40;
  // 20 chars: concise = 0.5; its 3-grams {i added wrong, added wrong ., ...}: none in the answer: novel = 1.
  const std::string reflection = "I added wrong. Oops.";
  ASSERT_EQ(reflection.size(), 20u);
  EXPECT_DOUBLE_EQ(reflection_quality_bonus(reflection, " 2 + 2 = 5. #### 5", o), 0.4 * (0.5 + 1.0) / 2);
  // A reflection that repeats the answer: its 3-grams {2 + 2, + 2 =, 2 = 5} all in the answer: novel = 0;
  // 9 chars: concise = 1 - 9/40.
  EXPECT_DOUBLE_EQ(reflection_quality_bonus("2 + 2 = 5", " 2 + 2 = 5. #### 5", o), 0.4 * (1.0 - 9.0 / 40.0) / 2);
  // Longer than the target: concise = 0 (one word, no 3-gram: nothing copied, novel = 1).
  EXPECT_DOUBLE_EQ(reflection_quality_bonus(std::string(80, 'x'), "y", o), 0.4 * (0.0 + 1.0) / 2);

  ReflectRetryEnvironment env(o, "w");
  EXPECT_TRUE(env.gives_rewards());
  PromptExample t = task("What is 2+2?");
  t.reference = "4";
  std::string first;
  auto s = env.reset(t, 0, &first);
  s->step(turn(" 2 + 2 = 5. #### 5"));
  s->step(turn(reflection, "eos", 1));
  EXPECT_EQ(s->step(turn(" #### 4", "eos", 2)).reward, std::optional<double>(0.4 * 1.5 / 2));
  auto wrong = env.reset(t, 0, &first);  // a wrong retry earns nothing
  wrong->step(turn(" #### 5"));
  wrong->step(turn(reflection, "eos", 1));
  EXPECT_FALSE(wrong->step(turn(" #### 6", "eos", 2)).reward);
  EnvConfig c = env_config_from_json({{"type", "reflect_retry"}, {"reflection_bonus", 0.2}}, "w");
  EXPECT_TRUE(c.gives_rewards);
  EXPECT_EQ(error_of([] { env_config_from_json({{"type", "reflect_retry"}, {"reflection_bonus", -1}}, "w"); }),
            "w: environment type 'reflect_retry': option 'reflection_bonus' must be >= 0 (got -1; 0 = off)");
  EXPECT_EQ(error_of([] { env_config_from_json({{"type", "reflect_retry"}, {"reflection_target_chars", 0}}, "w"); }),
            "w: environment type 'reflect_retry': option 'reflection_target_chars' must be > 0 (got 0)");
}

TEST(EnvRegistry, TablesDefaultsAndErrors) {
  EnvConfig d = env_config_from_json(nullptr, "run.toml [env]");
  EXPECT_EQ(d.type, "single_turn");
  EXPECT_FALSE(d.gives_rewards);
  EnvConfig c = env_config_from_json({{"type", "calculator"}, {"max_turns", 3}, {"max_calls", 2}}, "run.toml [env]");
  EXPECT_EQ(c.episode.max_turns, 3);
  EXPECT_EQ(make_environment(c, "run.toml [env]")->name(), "calculator");
  EnvConfig g = env_config_from_json({{"type", "guess"}, {"weight", 0.5}}, "w");
  EXPECT_TRUE(g.gives_rewards);
  EXPECT_EQ(g.reward_weight, 0.5);
  EXPECT_EQ(environment_types(), (std::vector<std::string>{"agent", "calculator", "external", "guess", "reflect_retry",
                                                            "single_turn", "tools", "try_again"}));
  EXPECT_EQ(error_of([] { env_config_from_json({{"type", "calc"}}, "run.toml [env]"); }),
            "run.toml [env]: unknown environment type 'calc'; valid types: agent, calculator, external, guess, reflect_retry, "
            "single_turn, tools, try_again");
  EXPECT_EQ(error_of([] { env_config_from_json({{"type", "calculator"}, {"max_call", 2}}, "run.toml [env]"); }),
            "run.toml [env]: environment type 'calculator': unknown option 'max_call'; valid options: max_calls, "
            "max_episode_tokens, max_observation_tokens, max_turns (and type, weight)");
  EXPECT_EQ(error_of([] { env_config_from_json({{"type", "guess"}, {"max_turns", 0}}, "run.toml [env]"); }),
            "run.toml [env]: environment type 'guess': env.max_turns must be > 0 (got 0)");
  EXPECT_EQ(error_of([] { env_config_from_json({{"type", "external"}}, "run.toml [env]"); }),
            "run.toml [env]: environment type 'external': option 'command' is required: the program to run, e.g. "
            "command = [\"python3\", \"env.py\"]");
  EXPECT_EQ(error_of([] { env_config_from_json({{"type", "guess"}, {"max_turns", "4"}}, "run.toml [env]"); }),
            "run.toml [env]: environment type 'guess': option 'max_turns' must be an integer, got string \"4\"");
}

}  // namespace
}  // namespace rlf

// The episode producer on a tiny random model with a character tokenizer:
// multi-turn episodes are token-exact (prompt ids + sampled ids + appended
// ids), segments carry roles and only policy tokens carry loss weight; the
// single-turn environment gives what the engine gives; an environment that
// never ends is stopped at max_turns; observations are cut by the documented
// rule and counted; a failing session ends only its own episode.
#include <gtest/gtest.h>

#include "env/episode_producer.h"
#include "env/reflect_retry_env.h"
#include "env/single_turn_env.h"
#include "model/loader.h"
#include "tests/support/test_env.h"
#include "tests/support/tiny_policy.h"
#include "tokenizer/char_vocab.h"

namespace rlf {
namespace {

using test::tiny_policy;

// Appends `observation` after every turn; done after `turns` turns (0 = never).
class Scripted final : public Environment {
 public:
  int64_t turns = 3;
  std::string observation = " [obs] ";
  int64_t fail_session = -1, fail_turn = -1;  // this session throws at that turn
  int64_t fail_reset = -1;                    // this session's reset throws
  bool distinct_prompts = false;
  bool judge = false;                         // every turn is an answer; session k is right at turn k (done)
  int64_t resets = 0;

  std::string name() const override { return "scripted"; }
  std::unique_ptr<EnvironmentSession> reset(const PromptExample& task, uint64_t, std::string* first) override {
    const int64_t k = resets++;
    if (k == fail_reset) fail("cannot set up session ", k);
    *first = distinct_prompts ? task.prompt + std::to_string(k) : task.prompt;
    return std::make_unique<Session>(*this, k);
  }
  bool gives_rewards() const override { return true; }

 private:
  class Session final : public EnvironmentSession {
   public:
    Session(const Scripted& env, int64_t k) : env_(env), k_(k) {}
    EnvStep step(const PolicyTurn& t) override {
      if (k_ == env_.fail_session && t.turn == env_.fail_turn) fail("session ", k_, " broke at turn ", t.turn);
      EnvStep s;
      s.reward = 0.25 * (t.turn + 1);
      s.done = env_.turns > 0 && t.turn + 1 >= env_.turns;
      s.observation = env_.observation;
      s.observation_is_feedback = t.turn == 1;
      s.feedback = "turn " + std::to_string(t.turn);
      if (env_.judge) {
        s.correct = t.turn == k_;
        s.done = *s.correct;
      }
      return s;
    }

   private:
    const Scripted& env_;
    int64_t k_;
  };
};

PromptExample producer_task(const std::string& prompt) {
  PromptExample t;
  t.id = "t";
  t.prompt = prompt;
  t.where = "tasks #0";
  return t;
}

SamplingParams params(int64_t max_new) {
  SamplingParams p;
  p.temperature = 1.0;
  p.max_new_tokens = max_new;
  return p;
}

// Episode::with_prompt on a two-turn episode: the new prompt replaces the old one's tokens, every later
// token keeps its values in every stream (k per token too), the segments move by the difference, and the new
// prompt positions hold what the old prompt's first position held.
TEST(Episode, WithPromptMovesEveryStreamAndSegment) {
  Episode e = Episode::single_turn(3, {1, 2, 3}, {10, 11}, {-0.5f, -0.25f}, 4);
  e.tokens.insert(e.tokens.end(), {20, 21, 30});
  e.n_turns = 2;
  e.loss_weight.insert(e.loss_weight.end(), {0.0f, 0.0f, 1.0f});
  e.old_logprob.insert(e.old_logprob.end(), {0.0f, 0.0f, -0.75f});
  e.policy_version.insert(e.policy_version.end(), {-1, -1, 4});
  e.segments.push_back({.role = SegmentRole::Observation, .begin = 5, .end = 7, .turn = 0});
  e.segments.push_back({.role = SegmentRole::Policy, .begin = 7, .end = 8, .turn = 1});
  e.sampling_mask_id.assign(8 * 2, -1);
  e.sampling_mask_id[5 * 2] = 7;  // token 5's kept set, k = 2
  ASSERT_NO_THROW(e.validate());
  const Episode m = e.with_prompt({9, 9, 9, 9, 9}, "new prompt");
  ASSERT_NO_THROW(m.validate());
  EXPECT_EQ(m.tokens, (std::vector<int32_t>{9, 9, 9, 9, 9, 10, 11, 20, 21, 30}));
  EXPECT_EQ(m.n_prompt, 5);
  EXPECT_EQ(m.loss_weight, (std::vector<float>{0, 0, 0, 0, 0, 1, 1, 0, 0, 1}));
  EXPECT_EQ(m.old_logprob, (std::vector<float>{0, 0, 0, 0, 0, -0.5f, -0.25f, 0, 0, -0.75f}));
  EXPECT_EQ(m.policy_version, (std::vector<int32_t>{-1, -1, -1, -1, -1, 4, 4, -1, -1, 4}));
  ASSERT_EQ(m.sampling_mask_id.size(), 20u);
  EXPECT_EQ(m.sampling_mask_id[7 * 2], 7);
  EXPECT_TRUE(m.ref_logprob.empty());
  ASSERT_EQ(m.segments.size(), 4u);
  EXPECT_EQ(m.segments[0].end, 5);
  EXPECT_EQ(m.segments[0].text, "new prompt");
  EXPECT_EQ(m.segments[1].begin, 5);
  EXPECT_EQ(m.segments[2].begin, 7);
  EXPECT_EQ(m.segments[3].end, 10);
  EXPECT_EQ(m.group, 3);
  EXPECT_EQ(test::error_of([&] { e.with_prompt({}, ""); }), "episode: a new prompt needs at least one token");
}

TEST(EpisodeProducer, MultiTurnEpisodesAreTokenExactWithRolesAndWeights) {
  test::TempDir dir;
  Policy policy = tiny_policy(dir);
  Scripted env;
  EpisodeOptions o;
  o.max_turns = 5;
  EpisodeProducer producer(policy, env, o);
  const PromptExample t = producer_task("Count:");
  EpisodeStats stats;
  auto groups = producer.produce({&t}, 3, params(6), {42}, 7, &stats);
  ASSERT_EQ(groups.size(), 1u);
  ASSERT_EQ(groups[0].episodes.size(), 3u);
  const std::vector<int32_t> prompt_ids = policy.tokenizer->encode("Count:", true);
  const std::vector<int32_t> obs_ids = policy.tokenizer->encode(" [obs] ", false);
  for (const Episode& e : groups[0].episodes) {
    e.validate();
    EXPECT_EQ(e.n_turns, 3);
    EXPECT_EQ(e.end_reason, "env");
    EXPECT_EQ(std::vector<int32_t>(e.tokens.begin(), e.tokens.begin() + e.n_prompt), prompt_ids);
    // prompt, turn, observation, turn, feedback, turn
    ASSERT_EQ(e.segments.size(), 6u);
    const SegmentRole roles[] = {SegmentRole::Prompt, SegmentRole::Policy, SegmentRole::Observation,
                                 SegmentRole::Policy, SegmentRole::Feedback, SegmentRole::Policy};
    for (size_t k = 0; k < 6; ++k) EXPECT_EQ(e.segments[k].role, roles[k]) << k;
    for (const Segment& s : e.segments) {
      for (int64_t i = s.begin; i < s.end; ++i) {
        const size_t u = static_cast<size_t>(i);
        if (s.role == SegmentRole::Policy) {
          EXPECT_EQ(e.loss_weight[u], 1.0f);
          EXPECT_EQ(e.policy_version[u], 7);
          EXPECT_LT(e.old_logprob[u], 0.0f);
        } else {
          EXPECT_EQ(e.loss_weight[u], 0.0f);
          EXPECT_EQ(e.policy_version[u], -1);
        }
      }
      if (s.role == SegmentRole::Observation || s.role == SegmentRole::Feedback) {
        EXPECT_EQ(std::vector<int32_t>(e.tokens.begin() + s.begin, e.tokens.begin() + s.end), obs_ids);
        EXPECT_EQ(s.text, " [obs] ");
      }
    }
    ASSERT_EQ(e.turn_rewards.size(), 3u);
    EXPECT_DOUBLE_EQ(*e.turn_rewards[2], 0.75);
    EXPECT_EQ(e.turn_feedback[1], "turn 1");
  }
  EXPECT_EQ(stats.n_episodes, 3);
  EXPECT_EQ(stats.n_turns, 9);
  EXPECT_EQ(stats.n_ended_by_env, 3);
  EXPECT_EQ(stats.n_observation_tokens, 3 * 2 * static_cast<int64_t>(obs_ids.size()));
  EXPECT_DOUBLE_EQ(stats.to_metrics()["episode/turns_mean"].get<double>(), 3.0);
  // The prompt was prefilled once for the group; then each token once.
  const EngineStats& es = producer.engine().stats();
  EXPECT_EQ(es.n_prefill_tokens, static_cast<int64_t>(prompt_ids.size()));
  int64_t fed = es.n_prefill_tokens;
  for (const Episode& e : groups[0].episodes) fed += e.n_completion() - 1;
  EXPECT_EQ(es.n_fed_tokens, fed);
  EXPECT_EQ(es.n_appended_tokens, 3 * 2 * static_cast<int64_t>(obs_ids.size()));
}

TEST(EpisodeProducer, SingleTurnEnvironmentGivesWhatTheEngineGives) {
  test::TempDir dir;
  Policy policy = tiny_policy(dir);
  SingleTurnEnvironment env;
  EpisodeProducer producer(policy, env, {});
  const PromptExample a = producer_task("What is 2+2?"), b = producer_task("Hi");
  auto groups = producer.produce({&a, &b}, 2, params(9), {5, 6}, 0, nullptr);
  RolloutEngine engine(policy.model(), policy.tokenizer, EngineOptions{64, 0, policy.eos_token_ids, 0});
  std::vector<GenerationRequest> reqs(2);
  for (int i = 0; i < 2; ++i) {
    reqs[i].prompt_ids = policy.tokenizer->encode(i == 0 ? a.prompt : b.prompt, true);
    reqs[i].n = 2;
    reqs[i].params = params(9);
    reqs[i].params.seed = 5 + i;
  }
  auto seqs = engine.generate(reqs);
  for (size_t k = 0; k < seqs.size(); ++k) {
    const Episode& e = groups[seqs[k].request_index].episodes[seqs[k].sample_index];
    EXPECT_EQ(std::vector<int32_t>(e.tokens.begin() + e.n_prompt, e.tokens.end()), seqs[k].completion_ids);
    EXPECT_EQ(e.completion_text, seqs[k].text);
    EXPECT_EQ(e.n_turns, 1);
    EXPECT_EQ(e.end_reason, "env");
    for (size_t j = 0; j < seqs[k].logprobs.size(); ++j)
      EXPECT_EQ(e.old_logprob[e.n_prompt + j], seqs[k].logprobs[j]);
  }
}

// Prompts already tokenized (a critique or refinement prompt fitted to the
// context) are fed as given, with no session: each episode is what the engine
// samples after them, recorded after its episode_prompt when one is given.
TEST(EpisodeProducer, TokenPromptsGiveWhatTheEngineGivesAfterTheirEpisodePrompt) {
  test::TempDir dir;
  Policy policy = tiny_policy(dir);
  SingleTurnEnvironment env;
  EpisodeProducer producer(policy, env, {});
  std::vector<TokenPrompt> prompts(2);
  prompts[0].ids = policy.tokenizer->encode("Feedback: try 4. What is 2+2?", true);
  prompts[0].episode_prompt = policy.tokenizer->encode("What is 2+2?", true);
  prompts[1].ids = policy.tokenizer->encode("Hi", true);
  for (int i = 0; i < 2; ++i) prompts[i].params = params(9), prompts[i].params.seed = 11 + i;
  const std::vector<Episode> episodes = producer.produce_from_ids(prompts, 3);
  RolloutEngine engine(policy.model(), policy.tokenizer, EngineOptions{64, 0, policy.eos_token_ids, 0});
  std::vector<GenerationRequest> reqs(2);
  for (int i = 0; i < 2; ++i) reqs[i].prompt_ids = prompts[i].ids, reqs[i].params = prompts[i].params;
  const auto seqs = engine.generate(reqs);
  ASSERT_EQ(episodes.size(), 2u);
  for (size_t k = 0; k < 2; ++k) {
    const Episode& e = episodes[k];
    const auto& shown = k == 0 ? prompts[0].episode_prompt : prompts[1].ids;
    EXPECT_EQ(std::vector<int32_t>(e.tokens.begin(), e.tokens.begin() + e.n_prompt), shown);
    EXPECT_EQ(std::vector<int32_t>(e.tokens.begin() + e.n_prompt, e.tokens.end()), seqs[k].completion_ids);
    EXPECT_EQ(e.completion_text, seqs[k].text);
    EXPECT_EQ(e.end_reason, "env");
    ASSERT_EQ(e.n_turns, 1);
    EXPECT_EQ(e.segments.at(1).text, seqs[k].text);
    for (size_t j = 0; j < seqs[k].logprobs.size(); ++j) {
      EXPECT_EQ(e.old_logprob[e.n_prompt + j], seqs[k].logprobs[j]);
      EXPECT_EQ(e.policy_version[e.n_prompt + j], 3);
      EXPECT_EQ(e.loss_weight[e.n_prompt + j], 1.0f);
    }
  }
  EXPECT_EQ(producer.engine().cache_bytes(), 0);  // released
}

// Turn weights from the environment reach the episode: Reflect-Retry-Reward
// trains the reflection only (the tiny model never answers right).
TEST(EpisodeProducer, TurnWeightsFromTheEnvironmentSetTheLossWeights) {
  test::TempDir dir;
  Policy policy = tiny_policy(dir);
  ReflectRetryEnvironment env({}, "test");
  EpisodeOptions o;
  o.max_turns = 3;
  EpisodeProducer producer(policy, env, o);
  PromptExample t = producer_task("What is 2+2?");
  t.reference = "4";
  auto groups = producer.produce({&t}, 3, params(6), {11}, 0, nullptr);
  for (const Episode& e : groups[0].episodes) {
    e.validate();
    ASSERT_EQ(e.n_turns, 3) << e.transcript();
    int64_t trained = 0;
    for (const Segment& s : e.segments) {
      if (s.role != SegmentRole::Policy) {
        if (s.role != SegmentRole::Prompt) {
          EXPECT_EQ(s.role, SegmentRole::Feedback);
        }
        continue;
      }
      for (int64_t k = s.begin; k < s.end; ++k) {
        EXPECT_EQ(e.loss_weight[static_cast<size_t>(k)], s.turn == 1 ? 1.0f : 0.0f) << "turn " << s.turn;
        trained += s.turn == 1;
      }
    }
    EXPECT_EQ(e.n_policy_tokens(), trained);
    EXPECT_GT(trained, 0);
  }
}

TEST(EpisodeProducer, AnEnvironmentThatNeverEndsStopsAtMaxTurns) {
  test::TempDir dir;
  Policy policy = tiny_policy(dir);
  Scripted env;
  env.turns = 0;  // never done
  EpisodeOptions o;
  o.max_turns = 4;
  EpisodeProducer producer(policy, env, o);
  const PromptExample t = producer_task("Go");
  EpisodeStats stats;
  auto g = producer.produce({&t}, 2, params(3), {1}, 0, &stats);
  for (const Episode& e : g[0].episodes) {
    EXPECT_EQ(e.n_turns, 4);
    EXPECT_EQ(e.end_reason, "max_turns");
  }
  EXPECT_EQ(stats.n_ended_by_max_turns, 2);
}

// Accuracy per attempt and turns to solve, counted by hand: session k is
// right at turn k, max_turns = 3, so sessions 0, 1, 2 solve at attempts
// 1, 2, 3 and session 3 never does.
TEST(EpisodeProducer, AccuracyPerAttemptAndTurnsToSolve) {
  test::TempDir dir;
  Policy policy = tiny_policy(dir);
  Scripted env;
  env.judge = true;
  EpisodeOptions o;
  o.max_turns = 3;
  EpisodeProducer producer(policy, env, o);
  const PromptExample t = producer_task("Go");
  EpisodeStats stats;
  producer.produce({&t}, 4, params(3), {5}, 0, &stats);
  EXPECT_EQ(stats.attempts_judged, (std::vector<int64_t>{4, 3, 2}));
  EXPECT_EQ(stats.attempts_right, (std::vector<int64_t>{1, 1, 1}));
  const Json m = stats.to_metrics();
  EXPECT_DOUBLE_EQ(m.at("episode/accuracy_attempt1").get<double>(), 0.25);
  EXPECT_DOUBLE_EQ(m.at("episode/accuracy_attempt2").get<double>(), 1.0 / 3.0);
  EXPECT_DOUBLE_EQ(m.at("episode/accuracy_attempt3").get<double>(), 0.5);
  EXPECT_DOUBLE_EQ(m.at("episode/accuracy_first").get<double>(), 0.25);
  EXPECT_DOUBLE_EQ(m.at("episode/accuracy_final").get<double>(), 0.75);
  EXPECT_DOUBLE_EQ(m.at("episode/turns_to_solve").get<double>(), 2.0);
  // Summed over calls; an environment that judges nothing adds no such metric.
  EpisodeStats twice = stats;
  twice += stats;
  EXPECT_EQ(twice.attempts_judged, (std::vector<int64_t>{8, 6, 4}));
  EXPECT_DOUBLE_EQ(twice.to_metrics().at("episode/accuracy_final").get<double>(), 0.75);
  EXPECT_FALSE(EpisodeStats{}.to_metrics().contains("episode/accuracy_first"));
}

TEST(EpisodeProducer, LongObservationsAreCutByTheDocumentedRuleAndCounted) {
  test::TempDir dir;
  Policy policy = tiny_policy(dir);
  Scripted env;
  env.turns = 0;
  env.observation = std::string(100, 'x');
  EpisodeOptions o;
  o.max_turns = 10;
  o.max_observation_tokens = 16;
  o.max_episode_tokens = 45;  // turn 4 + obs 16 + turn 4 + obs 16 -> 40; 5 left: obs cut to 4 (room - 1)
  EpisodeProducer producer(policy, env, o);
  const PromptExample t = producer_task("Go");
  EpisodeStats stats;
  auto g = producer.produce({&t}, 1, params(4), {9}, 0, &stats);
  const Episode& e = g[0].episodes[0];
  e.validate();
  std::vector<int64_t> obs_lengths;
  for (const Segment& s : e.segments)
    if (s.role == SegmentRole::Observation || s.role == SegmentRole::Feedback) {
      obs_lengths.push_back(s.end - s.begin);
      EXPECT_TRUE(s.truncated);
    }
  // Every policy turn here ran to its 4-token limit (no EOS in so few random tokens is not guaranteed,
  // so check the rule rather than exact lengths): each observation <= 16, the total within the budget.
  for (int64_t n : obs_lengths) EXPECT_LE(n, 16);
  EXPECT_LE(e.n_completion(), 45);
  EXPECT_GE(stats.n_observations_truncated, 1);
  EXPECT_FALSE(stats.notes.empty());
  EXPECT_TRUE(e.end_reason == "length" || e.end_reason == "context") << e.end_reason;
}

TEST(EpisodeProducer, AFailingSessionEndsOnlyItsEpisode) {
  test::TempDir dir;
  Policy policy = tiny_policy(dir);
  Scripted env;
  env.fail_session = 1;
  env.fail_turn = 1;
  env.fail_reset = 2;
  EpisodeOptions o;
  EpisodeProducer producer(policy, env, o);
  const PromptExample t = producer_task("Go");
  EpisodeStats stats;
  auto g = producer.produce({&t}, 4, params(3), {2}, 0, &stats);
  ASSERT_EQ(g[0].episodes.size(), 4u);
  EXPECT_EQ(g[0].episodes[0].end_reason, "env");
  EXPECT_EQ(g[0].episodes[0].n_turns, 3);
  EXPECT_EQ(g[0].episodes[1].end_reason, "env_error");
  EXPECT_EQ(g[0].episodes[1].env_error, "session 1 broke at turn 1");
  EXPECT_EQ(g[0].episodes[1].n_turns, 2);
  EXPECT_EQ(g[0].episodes[2].end_reason, "env_error");
  EXPECT_EQ(g[0].episodes[2].env_error, "cannot set up session 2");
  EXPECT_EQ(g[0].episodes[2].n_policy_tokens(), 0);
  EXPECT_EQ(g[0].episodes[3].end_reason, "env");
  EXPECT_EQ(stats.n_env_errors, 2);
  for (const Episode& e : g[0].episodes) e.validate();
}

TEST(EpisodeProducer, DistinctFirstObservationsGetRequestsOfTheirOwn) {
  test::TempDir dir;
  Policy policy = tiny_policy(dir);
  Scripted env;
  env.turns = 1;
  env.distinct_prompts = true;
  EpisodeProducer producer(policy, env, {});
  const PromptExample t = producer_task("P");
  auto g = producer.produce({&t}, 3, params(3), {4}, 0, nullptr);
  ASSERT_EQ(g[0].episodes.size(), 3u);
  for (int k = 0; k < 3; ++k) {
    const Episode& e = g[0].episodes[static_cast<size_t>(k)];
    EXPECT_EQ(policy.tokenizer->decode(std::vector<int32_t>(e.tokens.begin() + 1, e.tokens.begin() + e.n_prompt)),
              "P" + std::to_string(k));
  }
}

}  // namespace
}  // namespace rlf

// Critique-guided refinement (train/refinement.h) and the distillation
// teacher (train/distillation.h) on a tiny random model with
// a character tokenizer and a reward that is easy to hit ("the answer holds
// an 'e'"): refinements are episodes of their group made of the original
// prompt's ids and the sampled ids (nothing re-tokenized), off-policy,
// EpisodeSource::Refinement, loss weight 1 on their tokens only, scored by the
// same rewards; "correct" adds every correct one, "best" at most one per
// group; a failing critic leaves its episode alone and is counted; the same
// seed gives the same refinements.
#include <gtest/gtest.h>

#include <set>

#include "env/episode_rewards.h"
#include "env/single_turn_env.h"
#include "env/token_streams.h"
#include "feedback/template_critic.h"
#include "rewards/reward_set.h"
#include "tests/support/test_env.h"
#include "tests/support/tiny_policy.h"
#include "tests/train/run_fixtures.h"
#include "train/distillation.h"
#include "train/feedback_conditioning.h"
#include "train/ema_weights.h"
#include "train/lessons.h"
#include "train/micro_batch.h"
#include "train/refinement.h"
#include "feedback/reflexion.h"
#include "train/replay_buffer.h"
#include "train/rl_steps.h"
#include "train/run_context.h"

namespace rlf {
namespace {

class HasE final : public Reward {
 public:
  std::string name() const override { return "has_e"; }
  std::vector<RewardResult> score(const RewardGroup& g) override {
    std::vector<RewardResult> out;
    for (const auto& s : g.samples) {
      RewardResult r;
      r.score = s.completion.find('e') != std::string::npos ? 1.0 : 0.0;
      r.explanation = *r.score > 0 ? "has an e" : "no e";
      out.push_back(r);
    }
    return out;
  }
};

// Fails every other request; otherwise says "Use an e."
class FlakyCritic final : public Critic {
 public:
  int64_t calls = 0;
  std::string name() const override { return "flaky"; }
  std::vector<Critique> critique(const std::vector<CritiqueRequest>& rs) override {
    std::vector<Critique> out(rs.size());
    for (size_t i = 0; i < rs.size(); ++i) {
      EXPECT_FALSE(rs[i].correct);
      EXPECT_EQ(rs[i].explanation, "has_e=0 (no e)");
      if (calls++ % 2) {
        out[i].error = "flaky";
      } else {
        out[i].ok = true;
        out[i].text = "Use an e.";
      }
    }
    return out;
  }
};

struct Fixture {
  test::TempDir dir;
  Policy policy = test::tiny_policy(dir, 128);
  SingleTurnEnvironment env;
  EpisodeProducer producer{policy, env, EpisodeOptions{}};  // rollouts and refinements
  RewardSet rewards;
  std::vector<PromptExample> tasks;
  SamplingParams sampling;
  Fixture() {
    rewards.add("has_e", 1.0, std::make_unique<HasE>());
    for (int i = 0; i < 4; ++i) {
      PromptExample t;
      t.id = "t" + std::to_string(i);
      t.prompt = "Say something " + std::to_string(i) + ":";
      t.where = "task #" + std::to_string(i);
      tasks.push_back(t);
    }
    sampling.max_new_tokens = 6;
    sampling.temperature = 1.0;
  }
  // Groups of rollouts, scored.
  std::vector<ScoredGroup> groups(int64_t n) {
    std::vector<const PromptExample*> ts;
    std::vector<uint64_t> seeds;
    for (size_t i = 0; i < tasks.size(); ++i) ts.push_back(&tasks[i]), seeds.push_back(100 + i);
    auto produced = producer.produce(ts, n, sampling, seeds, 0, nullptr);
    std::vector<ScoredGroup> out(produced.size());
    for (size_t g = 0; g < produced.size(); ++g) {
      out[g] = score_group(std::move(produced[g]), rewards, sampling.max_new_tokens, RewardAggregation::sum_then_normalize);
      for (auto& e : out[g].group.episodes) e.group = static_cast<int64_t>(g);
    }
    return out;
  }
  Refiner refiner(Critic& critic, const std::string& select) {
    RefineOptions o;
    o.enabled = true;
    o.select = refine_select_names().parse(select);
    return Refiner(producer, rewards, critic, o, sampling, RewardAggregation::sum_then_normalize, 0, true, 5);
  }
};

TEST(Refinement, RefinementsJoinTheirGroupAsShapedOffPolicyEpisodes) {
  Fixture f;
  TemplateCriticOptions co;
  co.kind = "text";
  TemplateCritic critic(co);
  auto groups = f.groups(8);
  std::vector<size_t> before;
  int64_t failed = 0;
  for (const auto& g : groups) {
    before.push_back(g.group.episodes.size());
    for (const auto& r : g.scores.results[0]) failed += *r.score < 0.5;
  }
  ASSERT_GT(failed, 0);
  Refiner refiner = f.refiner(critic, "correct");
  RefineStats st = refiner.refine(groups, 42, /*version=*/3);
  EXPECT_EQ(st.n_failed, failed);
  EXPECT_EQ(st.n_critiques, failed);
  EXPECT_EQ(st.n_critic_failures, 0);
  EXPECT_EQ(st.n_refinements, failed);
  EXPECT_GT(st.n_correct, 0) << "no refinement hit the easy reward: the test needs another seed";
  EXPECT_EQ(st.n_added, st.n_correct);
  int64_t added = 0;
  for (size_t g = 0; g < groups.size(); ++g) {
    const ScoredGroup& sg = groups[g];
    ASSERT_EQ(sg.scores.results[0].size(), sg.group.episodes.size());
    ASSERT_EQ(sg.totals.size(), sg.group.episodes.size());
    const Episode& first = sg.group.episodes[0];
    for (size_t i = before[g]; i < sg.group.episodes.size(); ++i, ++added) {
      const Episode& e = sg.group.episodes[i];
      e.validate();
      EXPECT_EQ(e.source, EpisodeSource::Refinement);
      EXPECT_FALSE(e.on_policy);
      EXPECT_EQ(e.group, static_cast<int64_t>(g));
      // The original prompt's ids, then the sampled ids (weight 1, version 3).
      ASSERT_EQ(e.n_prompt, first.n_prompt);
      EXPECT_TRUE(std::equal(e.tokens.begin(), e.tokens.begin() + e.n_prompt, first.tokens.begin()));
      for (size_t t = 0; t < e.tokens.size(); ++t) {
        const bool policy = static_cast<int64_t>(t) >= e.n_prompt;
        EXPECT_EQ(e.loss_weight[t], policy ? 1.0f : 0.0f);
        EXPECT_EQ(e.policy_version[t], policy ? 3 : -1);
      }
      EXPECT_EQ(*sg.scores.results[0][i].score, 1.0);
      EXPECT_NE(e.completion_text.find('e'), std::string::npos);
      EXPECT_EQ(e.turn_feedback.at(0), "The answer is incorrect. has_e=0 (no e)");
      EXPECT_EQ(f.policy.tokenizer->decode(std::vector<int32_t>(e.tokens.begin() + e.n_prompt, e.tokens.end()), true),
                e.completion_text);
    }
  }
  EXPECT_EQ(added, st.n_added);
  // Same seed, same refinements.
  auto again = f.groups(8);
  f.refiner(critic, "correct").refine(again, 42, 3);
  for (size_t g = 0; g < groups.size(); ++g) {
    ASSERT_EQ(again[g].group.episodes.size(), groups[g].group.episodes.size());
    for (size_t i = 0; i < groups[g].group.episodes.size(); ++i)
      EXPECT_EQ(again[g].group.episodes[i].tokens, groups[g].group.episodes[i].tokens);
  }
}

TEST(Refinement, BestAddsOnePerGroupAndFailedCritiquesAreCounted) {
  Fixture f;
  FlakyCritic critic;
  auto groups = f.groups(8);
  std::vector<size_t> before;
  for (const auto& g : groups) before.push_back(g.group.episodes.size());
  RefineStats st = f.refiner(critic, "best").refine(groups, 42, 0);
  EXPECT_EQ(st.n_critic_failures, st.n_critiques / 2);
  EXPECT_EQ(st.n_refinements, st.n_critiques - st.n_critic_failures);
  EXPECT_EQ(st.notes.at(0).rfind("critic 'flaky' failed on task #", 0), 0u) << st.notes.at(0);
  int64_t added = 0;
  for (size_t g = 0; g < groups.size(); ++g) {
    EXPECT_LE(groups[g].group.episodes.size(), before[g] + 1);
    added += static_cast<int64_t>(groups[g].group.episodes.size() - before[g]);
  }
  EXPECT_EQ(added, st.n_added);
  EXPECT_GT(added, 0);
  LocalReducer one_process;
  Json m = Refiner::metrics(st, one_process);
  EXPECT_EQ(m["refine/critic_failures"].get<double>(), static_cast<double>(st.n_critic_failures));
  EXPECT_NEAR(m["accuracy/after_feedback"].get<double>() - m["accuracy/first_attempt"].get<double>(),
              static_cast<double>(st.n_correct) / static_cast<double>(st.n_rollouts), 1e-12);
}

}  // namespace
}  // namespace rlf

namespace rlf {
namespace {

// The log-probs `model` gives e's completion tokens with `context` in front
// of them instead of e's prompt: element k is completion token k's.
std::vector<float> after_context(CausalLMImpl& model, const Tokenizer& tokenizer, const std::string& context,
                                 const Episode& e) {
  Episode by_hand;
  by_hand.tokens = tokenizer.encode(context, true);
  const size_t n_context = by_hand.tokens.size();
  by_hand.tokens.insert(by_hand.tokens.end(), e.tokens.begin() + e.n_prompt, e.tokens.end());
  by_hand.loss_weight.assign(by_hand.tokens.size(), 0.0f);
  by_hand.old_logprob.assign(by_hand.tokens.size(), 0.0f);
  const std::vector<float> lp = recompute_logprobs(model, {&by_hand}, 4)[0];
  return std::vector<float>(lp.begin() + static_cast<int64_t>(n_context), lp.end());
}

// The distillation teacher: the policy with the context in front of the
// episode's own tokens; its log-probs equal a forward over exactly that
// sequence. failed_only and {sibling} skip what they must.
TEST(Distillation, TeacherLogprobsAreThePolicysWithTheContextInFront) {
  Fixture f;
  auto groups = f.groups(4);
  DistillOptions o;
  o.enabled = true;
  o.context = "Hint: {explanation}\n{prompt}";
  DistillTeacher teacher(f.policy, o, 0, true, 8);
  DistillStats st = teacher.add_teacher_logprobs(groups);
  EXPECT_EQ(st.n_episodes, 16);
  EXPECT_EQ(st.n_skipped, 0);
  const ScoredGroup& g = groups[1];
  const Episode& e = g.group.episodes[2];
  ASSERT_EQ(e.teacher_logprob.size(), e.tokens.size());
  const auto lp = after_context(*f.policy.model(), *f.policy.tokenizer,
                                "Hint: " + g.scores.describe(2) + "\n" + g.group.prompt, e);
  for (int64_t t = 0; t < static_cast<int64_t>(e.tokens.size()); ++t) {
    const float want = t < e.n_prompt ? 0.0f : lp[static_cast<size_t>(t - e.n_prompt)];
    EXPECT_NEAR(e.teacher_logprob[static_cast<size_t>(t)], want, 1e-5) << t;
  }

  // Only failed episodes; a {sibling} context needs a correct sibling.
  auto again = f.groups(4);
  int64_t n_correct = 0, n_groups_without = 0;
  for (const auto& sg : again) {
    int64_t c = 0;
    for (const auto& r : sg.scores.results[0]) c += *r.score > 0.5;
    n_correct += c;
    n_groups_without += c == 0;
  }
  o.failed_only = true;
  o.context = "{sibling}\n{prompt}";
  DistillStats st2 = DistillTeacher(f.policy, o, 0, true, 8).add_teacher_logprobs(again);
  // Correct episodes (failed_only) and the failed ones of groups with no correct sibling.
  EXPECT_EQ(st2.n_skipped, n_correct + 4 * n_groups_without);
  EXPECT_EQ(st2.n_episodes + st2.n_skipped, 16);
  o.teacher = DistillTeacherKind::Model;
  o.teacher_path = "";
  EXPECT_EQ(test::error_of([&] { o.validate(); }),
            "distill.teacher = \"model\" needs distill.teacher_path (the teacher's model directory)");
}

// distill.guard = "verifier_sign" in the stage: the verdict is the accuracy
// reward's (the one failed_only reads), the student's log-prob the episode's
// old_logprob; a policy token keeps its teacher log-prob only where the
// teacher agrees with the verdict (correct: t > s; wrong: t < s), else NaN,
// and distill/guard_dropped is the share dropped. An unknown value names the key.
TEST(Distillation, VerifierSignGuardKeepsOnlyTheTeachersAgreeingTokens) {
  Fixture f;
  auto groups = f.groups(4);
  auto unguarded = groups;
  DistillOptions o;
  o.enabled = true;
  o.context = "Hint: {explanation}\n{prompt}";
  DistillTeacher(f.policy, o, 0, true, 8).add_teacher_logprobs(unguarded);
  o.guard = DistillGuard::VerifierSign;
  const DistillStats st = DistillTeacher(f.policy, o, 0, true, 8).add_teacher_logprobs(groups);
  EXPECT_EQ(st.n_episodes, 16);
  int64_t n_tokens = 0, n_dropped = 0, n_correct = 0;
  for (size_t g = 0; g < groups.size(); ++g) {
    for (size_t i = 0; i < groups[g].group.episodes.size(); ++i) {
      const Episode& e = groups[g].group.episodes[i];
      const Episode& plain = unguarded[g].group.episodes[i];
      const bool correct = is_correct(groups[g], 0, i);
      n_correct += correct;
      ASSERT_EQ(e.teacher_logprob.size(), e.tokens.size());
      for (size_t t = 0; t < e.tokens.size(); ++t) {
        const float teacher = plain.teacher_logprob[t], student = e.old_logprob[t];
        if (e.loss_weight[t] <= 0) {
          EXPECT_EQ(e.teacher_logprob[t], teacher);
          continue;
        }
        const bool keep = correct ? teacher > student : teacher < student;
        ++n_tokens, n_dropped += !keep;
        if (keep) EXPECT_EQ(e.teacher_logprob[t], teacher) << g << " " << i << " " << t;
        else EXPECT_TRUE(std::isnan(e.teacher_logprob[t])) << g << " " << i << " " << t;
      }
    }
  }
  EXPECT_GT(n_correct, 0);
  EXPECT_LT(n_correct, 16);
  EXPECT_GT(n_dropped, 0);
  EXPECT_LT(n_dropped, n_tokens);
  EXPECT_EQ(st.n_guard_tokens, n_tokens);
  EXPECT_EQ(st.n_guard_dropped, n_dropped);
  LocalReducer reducer;
  EXPECT_NEAR(st.metrics(reducer)["distill/guard_dropped"].get<double>(),
              static_cast<double>(n_dropped) / static_cast<double>(n_tokens), 1e-12);
  DistillStats plain_stats;
  EXPECT_FALSE(plain_stats.metrics(reducer).contains("distill/guard_dropped"));  // guard = "none": no metric

  Json j = test::grpo_run_config("m", "o", 1);
  j["distill"] = {{"enabled", true}, {"guard", "verifier_sign"}};
  EXPECT_EQ(train_config_from_json(j, "cfg.toml").rl.distill.guard, DistillGuard::VerifierSign);
  j["distill"]["guard"] = "sign";
  test::expect_config_error(j, "'distill.guard' must be one of none, verifier_sign");
}

// Writes "Fix <n>." for the n-th request, failing every third.
class CountingCritic final : public Critic {
 public:
  int64_t calls = 0, requests = 0;
  std::string name() const override { return "counting"; }
  std::vector<Critique> critique(const std::vector<CritiqueRequest>& rs) override {
    ++calls;
    std::vector<Critique> out(rs.size());
    for (size_t i = 0; i < rs.size(); ++i, ++requests) {
      if (requests % 3 == 2) {
        out[i].error = "no";
        continue;
      }
      out[i].ok = true;
      out[i].text = "Fix " + std::to_string(requests) + ".";
      out[i].n_generated_tokens = 2;
    }
    return out;
  }
};

// {critique} in the context: the run's critic is asked once per step for the
// episodes that get a teacher, and the teacher reads what it wrote about each
// one's own attempt; a failed critique leaves its episode without a teacher.
TEST(Distillation, CritiqueContextReadsTheCriticOnTheEpisodesOwnAttempt) {
  Fixture f;
  auto groups = f.groups(4);
  DistillOptions o;
  o.enabled = true;
  o.context = "{prompt}{response}\n{critique}\n";
  EXPECT_TRUE(o.needs_critic());
  EXPECT_EQ(test::error_of([&] { DistillTeacher(f.policy, o, 0, true, 8); }),
            "distill.context has {critique}: it needs a critic ([critic]) to write it");
  CountingCritic critic;
  DistillStats st = DistillTeacher(f.policy, o, 0, true, 8, &critic).add_teacher_logprobs(groups);
  EXPECT_EQ(critic.calls, 1);
  EXPECT_EQ(critic.requests, 16);
  EXPECT_EQ(st.n_critic_failures, 5);  // requests 2, 5, 8, 11, 14
  EXPECT_EQ(st.n_episodes, 11);
  EXPECT_EQ(st.n_skipped, 5);
  EXPECT_EQ(st.n_generated_tokens, 22);
  // Episode 1 of group 1 is request 5 (failed): no teacher; episode 2 is request 6.
  EXPECT_TRUE(groups[1].group.episodes[1].teacher_logprob.empty());
  const ScoredGroup& g = groups[1];
  const Episode& e = g.group.episodes[2];
  ASSERT_EQ(e.teacher_logprob.size(), e.tokens.size());
  const auto lp =
      after_context(*f.policy.model(), *f.policy.tokenizer, g.group.prompt + e.transcript() + "\nFix 6.\n", e);
  for (int64_t t = e.n_prompt; t < static_cast<int64_t>(e.tokens.size()); ++t)
    EXPECT_NEAR(e.teacher_logprob[static_cast<size_t>(t)], lp[static_cast<size_t>(t - e.n_prompt)], 1e-5) << t;
  LocalReducer reducer;
  const Json m = st.metrics(reducer);
  EXPECT_EQ(m["distill/critic_failures"].get<double>(), 5);
  EXPECT_EQ(m["distill/generated_tokens"].get<double>(), 22);
}

// teacher = "frozen": the context in front of the KL reference's weights,
// which the student's updates do not move.
TEST(Distillation, FrozenTeacherReadsTheReferenceNotTheLivePolicy) {
  Fixture f;
  CausalLM reference = frozen_copy(*f.policy.model());
  {
    torch::NoGradGuard ng;
    for (auto& p : f.policy.model()->parameters()) p.add_(0.05);  // the student has moved since RL started
  }
  auto groups = f.groups(2);
  DistillOptions o;
  o.enabled = true;
  o.teacher = DistillTeacherKind::Frozen;
  o.context = "Hint\n{prompt}";
  EXPECT_EQ(test::error_of([&] { DistillTeacher(f.policy, o, 0, true, 8); }),
            "distill.teacher = \"frozen\" needs the KL reference model");
  DistillStats st = DistillTeacher(f.policy, o, 0, true, 8, nullptr, reference).add_teacher_logprobs(groups);
  EXPECT_EQ(st.n_episodes, 8);
  const ScoredGroup& g = groups[1];
  const Episode& e = g.group.episodes[1];
  const auto by_reference = after_context(*reference, *f.policy.tokenizer, "Hint\n" + g.group.prompt, e);
  const auto by_policy = after_context(*f.policy.model(), *f.policy.tokenizer, "Hint\n" + g.group.prompt, e);
  double moved = 0;
  for (int64_t t = e.n_prompt; t < static_cast<int64_t>(e.tokens.size()); ++t) {
    const size_t k = static_cast<size_t>(t - e.n_prompt);
    EXPECT_NEAR(e.teacher_logprob[static_cast<size_t>(t)], by_reference[k], 1e-5) << t;
    moved = std::max(moved, std::abs(static_cast<double>(by_policy[k] - by_reference[k])));
  }
  EXPECT_GT(moved, 1e-3);  // the live policy would have given other targets
  EXPECT_EQ(distill_teacher_names().parse("frozen"), DistillTeacherKind::Frozen);
}

// teacher = "ema": the context in front of the EMA of the policy's weights
// (train/ema_weights.h), which lags behind the live policy.
TEST(Distillation, EmaTeacherReadsTheAverageNotTheLivePolicy) {
  Fixture f;
  EmaWeights ema(*f.policy.model(), 0.5);
  {
    torch::NoGradGuard ng;
    for (auto& p : f.policy.model()->parameters()) p.add_(0.05);  // one step of the student
  }
  ema.update(*f.policy.model());  // the average is half-way there
  auto groups = f.groups(2);
  DistillOptions o;
  o.enabled = true;
  o.teacher = DistillTeacherKind::Ema;
  o.context = "Hint\n{prompt}";
  EXPECT_EQ(test::error_of([&] { DistillTeacher(f.policy, o, 0, true, 8); }),
            "distill.teacher = \"ema\" needs the EMA weights (train/ema_weights.h)");
  DistillStats st = DistillTeacher(f.policy, o, 0, true, 8, nullptr, ema.model()).add_teacher_logprobs(groups);
  EXPECT_EQ(st.n_episodes, 8);
  const ScoredGroup& g = groups[1];
  const Episode& e = g.group.episodes[1];
  const auto by_ema = after_context(*ema.model(), *f.policy.tokenizer, "Hint\n" + g.group.prompt, e);
  const auto by_policy = after_context(*f.policy.model(), *f.policy.tokenizer, "Hint\n" + g.group.prompt, e);
  double moved = 0;
  for (int64_t t = e.n_prompt; t < static_cast<int64_t>(e.tokens.size()); ++t) {
    const size_t k = static_cast<size_t>(t - e.n_prompt);
    EXPECT_NEAR(e.teacher_logprob[static_cast<size_t>(t)], by_ema[k], 1e-5) << t;
    moved = std::max(moved, std::abs(static_cast<double>(by_policy[k] - by_ema[k])));
  }
  EXPECT_GT(moved, 1e-3);  // the live policy would have given other targets
  EXPECT_EQ(distill_teacher_names().parse("ema"), DistillTeacherKind::Ema);
  EXPECT_EQ(o.teacher_context(), "Hint\n{prompt}");
  o.context = "";
  EXPECT_EQ(o.teacher_context(), "The answer is {reference}.\n{prompt}");
  for (double d : {0.0, 1.0, -0.5, 1.5}) {
    o.ema_decay = d;
    EXPECT_NE(test::error_of([&] { o.validate(); }).find("distill.ema_decay must be in (0, 1)"), std::string::npos)
        << d;
  }
}

// [distill]'s divergence keys: errors name the key; the context's default follows the teacher.
TEST(Distillation, DivergenceOptionsAreValidated) {
  DistillOptions o;
  EXPECT_EQ(o.teacher_context(), "The answer is {reference}.\n{prompt}");
  o.teacher = DistillTeacherKind::Model;
  o.teacher_path = "somewhere";
  EXPECT_EQ(o.teacher_context(), "{prompt}");
  o.validate();
  o.divergence = algo::DistillDivergence::ForwardKl;
  EXPECT_NE(test::error_of([&] { o.validate(); }).find("distill.divergence = \"forward_kl\" needs the teacher's "
                                                        "distribution: set distill.top_k >= 1"),
            std::string::npos);
  o.top_k = 4;
  o.validate();
  o.divergence = algo::DistillDivergence::Jsd;
  for (double beta : {0.0, 1.0, -0.5}) {
    o.beta = beta;
    EXPECT_NE(test::error_of([&] { o.validate(); }).find("distill.beta must be in (0, 1)"), std::string::npos);
  }
  o.beta = 0.3;
  o.top_k = -1;
  EXPECT_NE(test::error_of([&] { o.validate(); }).find("distill.top_k must be >= 0"), std::string::npos);
  o.top_k = 4;
  o.context = "no prompt here";
  EXPECT_NE(test::error_of([&] { o.validate(); }).find("distill.context must contain {prompt}"), std::string::npos);
}

}  // namespace
}  // namespace rlf

namespace rlf {
namespace {

// The replay buffer: correct rollouts are stored token-exact (at most
// capacity_per_task, newest kept); a group with none gets stored successes,
// re-scored, off-policy, with their stored log-probs; the buffer survives a
// round trip through JSON and refuses a buffer of another dataset or version.
// The feedback-conditional policy's critic: "Correct." on an answer with an e, the words "No e in <answer>."
// otherwise, and a failure on request 3.
class NoECritic final : public Critic {
 public:
  int64_t requests = 0;
  std::string name() const override { return "no-e"; }
  std::vector<Critique> critique(const std::vector<CritiqueRequest>& rs) override {
    std::vector<Critique> out(rs.size());
    for (size_t i = 0; i < rs.size(); ++i, ++requests) {
      if (requests == 3) {
        out[i].error = "down";
        continue;
      }
      out[i].ok = true;
      out[i].text = rs[i].response.find('e') != std::string::npos ? "Correct." : "No e in " + rs[i].response + ".";
      out[i].n_generated_tokens = 1;
    }
    return out;
  }
};

// FCP relabels every rollout episode with its own feedback in the condition's place: an episode whose
// feedback is the condition keeps its tokens; another's prompt is re-encoded with the feedback in it and
// its sampled tokens, their weights and log-probs follow unchanged, off-policy; a failed critique or a
// prompt over the context leaves its episode untrained.
TEST(FeedbackConditioning, EachEpisodeIsTrainedUnderItsOwnFeedback) {
  Fixture f;
  for (auto& t : f.tasks) t.prompt = "Correct. " + t.prompt;
  auto groups = f.groups(4);
  const auto before = groups;
  NoECritic critic;
  FcpOptions o;
  o.enabled = true;
  FeedbackConditioning fcp(*f.policy.tokenizer, critic, o, true, 128);
  const FcpStats st = fcp.relabel(groups, 0);
  EXPECT_EQ(critic.requests, 16);
  EXPECT_EQ(st.n_critic_failures, 1);
  EXPECT_EQ(st.n_episodes, 15);
  EXPECT_EQ(st.n_generated_tokens, 15);  // the failed critique wrote none
  EXPECT_EQ(st.n_skipped_context, 0);
  int64_t k = 0, positive = 0, relabelled = 0;
  for (size_t g = 0; g < groups.size(); ++g) {
    for (size_t i = 0; i < groups[g].group.episodes.size(); ++i, ++k) {
      const Episode& was = before[g].group.episodes[i];
      const Episode& e = groups[g].group.episodes[i];
      EXPECT_NO_THROW(e.validate());
      EXPECT_EQ(e.transcript(), was.transcript());
      if (k == 3) {  // the failed critique: no feedback, not trained on
        EXPECT_EQ(e.n_policy_tokens(), 0);
        EXPECT_EQ(e.tokens, was.tokens);
        continue;
      }
      const std::string response = was.transcript();
      if (response.find('e') != std::string::npos) {
        ++positive;
        EXPECT_EQ(e.tokens, was.tokens);
        EXPECT_TRUE(e.on_policy);
        continue;
      }
      ++relabelled;
      const std::string prompt = "No e in " + response + ". " + before[g].group.prompt.substr(9);
      const std::vector<int32_t> ids = f.policy.tokenizer->encode(prompt, true);
      ASSERT_EQ(e.n_prompt, static_cast<int64_t>(ids.size()));
      EXPECT_EQ(std::vector<int32_t>(e.tokens.begin(), e.tokens.begin() + e.n_prompt), ids);
      EXPECT_EQ(std::vector<int32_t>(e.tokens.begin() + e.n_prompt, e.tokens.end()),
                std::vector<int32_t>(was.tokens.begin() + was.n_prompt, was.tokens.end()));
      EXPECT_EQ(std::vector<float>(e.loss_weight.begin() + e.n_prompt, e.loss_weight.end()),
                std::vector<float>(was.loss_weight.begin() + was.n_prompt, was.loss_weight.end()));
      EXPECT_EQ(std::vector<float>(e.old_logprob.begin() + e.n_prompt, e.old_logprob.end()),
                std::vector<float>(was.old_logprob.begin() + was.n_prompt, was.old_logprob.end()));
      for (int64_t t = 0; t < e.n_prompt; ++t) EXPECT_EQ(e.loss_weight[static_cast<size_t>(t)], 0.0f);
      EXPECT_EQ(e.segments[0].text, prompt);
      EXPECT_FALSE(e.on_policy);
    }
  }
  EXPECT_GT(positive, 0);
  EXPECT_GT(relabelled, 0);
  EXPECT_EQ(st.n_positive, positive);
  LocalReducer reducer;
  const Json m = st.metrics(reducer);
  EXPECT_DOUBLE_EQ(m["fcp/positive_frac"].get<double>(), static_cast<double>(positive) / 15.0);
  EXPECT_EQ(m["fcp/critic_failures"].get<double>(), 1);

  // A window too small for the feedback: the relabelled episodes are not trained on; the positive ones are.
  auto tight = before;
  NoECritic critic2;
  const FcpStats st2 = FeedbackConditioning(*f.policy.tokenizer, critic2, o, true, 20).relabel(tight, 0);
  EXPECT_EQ(st2.n_skipped_context, relabelled);
  for (const auto& g : tight)
    for (const auto& e : g.group.episodes)
      if (e.n_policy_tokens() > 0) EXPECT_NE(e.transcript().find('e'), std::string::npos);

  // fcp.negative_weight scales the relabelled episodes' token weights; the condition's episodes keep theirs.
  auto scaled = before;
  NoECritic critic3;
  FcpOptions quarter = o;
  quarter.negative_weight = 0.25;
  FeedbackConditioning(*f.policy.tokenizer, critic3, quarter, true, 128).relabel(scaled, 0);
  int64_t n_scaled = 0;
  for (size_t g = 0; g < scaled.size(); ++g)
    for (size_t i = 0; i < scaled[g].group.episodes.size(); ++i) {
      const Episode& e = scaled[g].group.episodes[i];
      const Episode& full = groups[g].group.episodes[i];
      ASSERT_EQ(e.loss_weight.size(), full.loss_weight.size());
      const bool relabelled_here = !full.on_policy;
      n_scaled += relabelled_here;
      for (size_t t = 0; t < e.loss_weight.size(); ++t)
        EXPECT_EQ(e.loss_weight[t], relabelled_here ? 0.25f * full.loss_weight[t] : full.loss_weight[t]);
    }
  EXPECT_EQ(n_scaled, relabelled);
  quarter.negative_weight = 1.5;
  EXPECT_NE(test::error_of([&] { quarter.validate(); }).find("fcp.negative_weight must be in [0, 1], got 1.5"),
            std::string::npos);

  // A prompt without the condition is the config's mistake, named.
  auto plain = before;
  o.condition = "Right.";
  EXPECT_NE(test::error_of([&] { FeedbackConditioning(*f.policy.tokenizer, critic, o, true, 128).relabel(plain, 0); })
                .find("fcp.condition \"Right.\" is not in the rollout prompt of task #0"),
            std::string::npos);
  o.condition = "";
  EXPECT_NE(test::error_of([&] { o.validate(); }).find("fcp.condition must not be empty"), std::string::npos);
}

TEST(Replay, StoresSuccessesAndGivesThemToGroupsWithoutOne) {
  Fixture f;
  ReplayOptions o;
  o.enabled = true;
  o.capacity_per_task = 2;
  o.inject = 1;
  ReplayBuffer buffer(o);
  auto first = f.groups(8);
  int64_t correct = 0, kept = 0;
  for (const auto& g : first) {
    int64_t c = 0;
    for (const auto& r : g.scores.results[0]) c += *r.score > 0.5;
    correct += c;
    kept += std::min<int64_t>(c, 2);
  }
  ASSERT_GT(correct, 0);
  ReplayStats s1 = buffer.step(first, f.rewards, RewardAggregation::sum_then_normalize, 0, 6, /*step=*/0);
  EXPECT_EQ(s1.n_stored, correct);
  EXPECT_EQ(buffer.size(), kept);
  // The next step: every rollout fails; tasks with a stored success get one.
  auto second = f.groups(4);
  for (auto& g : second)
    for (auto& r : g.scores.results[0]) r.score = 0.0;
  for (auto& g : second) g.totals.assign(g.totals.size(), 0.0);
  ReplayStats s2 = buffer.step(second, f.rewards, RewardAggregation::sum_then_normalize, 0, 6, 1);
  EXPECT_EQ(s2.n_groups_without, 4);
  int64_t hits = 0;
  for (size_t gi = 0; gi < second.size(); ++gi) {
    const ScoredGroup& g = second[gi];
    if (g.group.episodes.size() == 4) continue;
    ++hits;
    ASSERT_EQ(g.group.episodes.size(), 5u);
    const Episode& e = g.group.episodes[4];
    EXPECT_EQ(e.source, EpisodeSource::Replay);
    EXPECT_FALSE(e.on_policy);
    EXPECT_EQ(e.group, g.group.episodes[0].group);
    EXPECT_EQ(*g.scores.results[0][4].score, 1.0);
    EXPECT_EQ(*g.totals[4], *e.reward);
    // The newest stored success of this task, token-exact with its log-probs.
    const Episode* newest = nullptr;
    for (const Episode& x : first[gi].group.episodes)
      if (x.completion_text.find('e') != std::string::npos) newest = &x;
    ASSERT_NE(newest, nullptr);
    EXPECT_EQ(e.tokens, newest->tokens);
    EXPECT_EQ(e.old_logprob, newest->old_logprob);
    EXPECT_EQ(e.policy_version, newest->policy_version);
  }
  EXPECT_EQ(s2.n_hits, hits);
  EXPECT_EQ(s2.n_injected, hits);
  EXPECT_GT(hits, 0);

  // Round trip; refusals.
  std::map<std::string, std::string> prompts;
  for (const auto& t : f.tasks) prompts[t.id] = t.prompt;
  ReplayBuffer copy(o);
  copy.restore(buffer.to_json(), prompts, "ckpt");
  EXPECT_EQ(copy.to_json(), buffer.to_json());
  auto other = prompts;
  other.begin()->second += "!";
  const std::string e1 = test::error_of([&] { copy.restore(buffer.to_json(), other, "ckpt"); });
  EXPECT_NE(e1.find("had another prompt"), std::string::npos) << e1;
  Json v2 = buffer.to_json();
  v2["version"] = 2;
  EXPECT_EQ(test::error_of([&] { copy.restore(v2, prompts, "ckpt"); }),
            "ckpt: replay buffer format version 2 (this rlf reads version 1)");
  const std::string e3 = test::error_of([&] { copy.restore(buffer.to_json(), {}, "ckpt"); });
  EXPECT_NE(e3.find("which is not in this run's dataset"), std::string::npos) << e3;

  // The per-token streams are saved by walking env/token_streams.h: a buffer
  // written before that (exactly these stream keys) still loads, and a stream
  // with NaN entries (no target) survives the round trip as null.
  const std::set<std::string> old_streams = {"loss_weight", "old_logprob", "policy_version"};
  Json saved = buffer.to_json();
  ASSERT_FALSE(saved["tasks"].empty());
  for (const Json& t : saved["tasks"])
    for (const Json& s : t["episodes"]) {
#define RLF_STREAM_KEY(type, name, ...) \
  EXPECT_EQ(s["episode"].contains(#name), old_streams.count(#name) > 0) << #name;
      RLF_TOKEN_STREAMS(RLF_STREAM_KEY)
#undef RLF_STREAM_KEY
    }
  Json old_format = saved;  // every key the format had before the walk, written out by hand
  for (Json& t : old_format["tasks"])
    for (Json& s : t["episodes"]) {
      Json& e = s["episode"];
      Json kept = Json::object();
      for (const char* k : {"tokens", "n_prompt", "segments", "loss_weight", "old_logprob", "policy_version", "n_turns",
                            "turn_rewards", "turn_feedback", "finish_reason", "end_reason", "completion_text"})
        kept[k] = e.at(k);
      e = kept;
    }
  ReplayBuffer from_old(o);
  from_old.restore(old_format, prompts, "old ckpt");
  EXPECT_EQ(from_old.to_json(), saved);
  Json with_targets = saved;
  Json& first_episode = with_targets["tasks"][0]["episodes"][0]["episode"];
  Json targets = Json::array();
  for (size_t t = 0; t < first_episode["tokens"].size(); ++t) targets.push_back(t % 2 ? Json(0.5) : Json(nullptr));
  first_episode["value_target"] = targets;
  ReplayBuffer nan_copy(o);
  nan_copy.restore(with_targets, prompts, "ckpt");
  EXPECT_EQ(nan_copy.to_json(), with_targets);
  first_episode["value_target"].erase(0);
  EXPECT_NE(test::error_of([&] { nan_copy.restore(with_targets, prompts, "ckpt"); }).find("value_target has"),
            std::string::npos);
}

}  // namespace
}  // namespace rlf

namespace rlf {
namespace {

// Records what it is asked and answers with a fixed reflection.
class RecordingCritic final : public Critic {
 public:
  std::vector<CritiqueRequest> seen;
  std::string name() const override { return "recording"; }
  std::vector<Critique> critique(const std::vector<CritiqueRequest>& rs) override {
    std::vector<Critique> out(rs.size());
    for (size_t i = 0; i < rs.size(); ++i) {
      seen.push_back(rs[i]);
      out[i].ok = true;
      out[i].text = "use an e";
    }
    return out;
  }
};

// Reflexion: attempt k tries the tasks not solved before it, with the task's
// reflections before its prompt; accuracy counts tasks solved so far; the
// memory keeps the reflections and refuses another dataset's.
TEST(Reflexion, AttemptsSeeTheirReflectionsAndAccuracyAccumulates) {
  Fixture f;
  for (int i = 4; i < 12; ++i) {
    PromptExample t = f.tasks[0];
    t.id = "t" + std::to_string(i);
    t.prompt = "Say something " + std::to_string(i) + ":";
    f.tasks.push_back(t);
  }
  RecordingCritic critic;
  ReflectionMemory memory(2);
  ReflexionOptions o;
  o.attempts = 3;
  o.sampling.max_new_tokens = 6;
  o.sampling.temperature = 1.0;  // a random policy: sampling makes later attempts differ
  ReflexionResult r = run_reflexion(f.policy, f.tasks, f.rewards, critic, memory, o);
  ASSERT_EQ(r.attempts.size(), 3u);
  EXPECT_EQ(r.n_tasks, 12);
  EXPECT_EQ(r.attempts[0].n_tried, 12);
  int64_t solved = 0;
  for (size_t k = 0; k < 3; ++k) {
    const ReflexionAttempt& a = r.attempts[k];
    if (k > 0) {
      EXPECT_EQ(a.n_tried, r.attempts[k - 1].n_tried - r.attempts[k - 1].n_solved);
    }
    solved += a.n_solved;
    EXPECT_DOUBLE_EQ(a.accuracy, static_cast<double>(solved) / 12.0);
    EXPECT_EQ(a.n_reflections, k < 2 ? a.n_tried - a.n_solved : 0);  // none after the last attempt
  }
  ASSERT_GT(r.attempts[1].n_tried, 0);
  // The second attempt's prompts carry the first attempt's reflection.
  bool saw = false;
  for (const CritiqueRequest& q : critic.seen)
    if (q.prompt.rfind("Note from an earlier attempt: use an e\n", 0) == 0) {
      saw = true;
      EXPECT_NE(q.prompt.find(q.task->prompt), std::string::npos);
    }
  EXPECT_TRUE(saw);
  // At most 2 reflections per task; a saved memory loads back; another dataset's is refused.
  for (const auto& t : f.tasks) EXPECT_LE(memory.reflections(t.id).size(), 2u);
  std::map<std::string, std::string> prompts;
  for (const auto& t : f.tasks) prompts[t.id] = t.prompt;
  test::TempDir dir;
  memory.save(dir / "memory.json");
  ReflectionMemory again(2);
  again.load(dir / "memory.json", prompts);
  EXPECT_EQ(again.to_json(), memory.to_json());
  auto with_memory = std::find_if(prompts.begin(), prompts.end(),
                                  [&](const auto& p) { return !memory.reflections(p.first).empty(); });
  ASSERT_NE(with_memory, prompts.end());
  with_memory->second = "another prompt";
  const std::string e = test::error_of([&] { again.load(dir / "memory.json", prompts); });
  EXPECT_NE(e.find("had another prompt"), std::string::npos) << e;
}

// Reflexion with a lesson pool shared across tasks (LANPO-style): every
// failed task's lesson is one text here, stored once, and the second
// attempt's prompts show it whatever task it came from.
TEST(Reflexion, ALessonPoolSharesLessonsAcrossSimilarTasks) {
  Fixture f;
  for (int i = 4; i < 10; ++i) {
    PromptExample t = f.tasks[0];
    t.id = "t" + std::to_string(i);
    t.prompt = "Say something " + std::to_string(i) + ":";
    f.tasks.push_back(t);
  }
  RecordingCritic critic;
  LessonPoolOptions lo;
  lo.k = 2;
  LessonPool pool(lo, "test tasks");
  ReflexionOptions o;
  o.attempts = 3;  // the critic sees attempt 2's prompts when it fails
  o.sampling.max_new_tokens = 6;
  o.sampling.temperature = 1.0;
  ReflexionResult r = run_reflexion(f.policy, f.tasks, f.rewards, critic, pool, o);
  ASSERT_GT(r.attempts[0].n_reflections, 1);  // several failed tasks wrote the same lesson
  EXPECT_EQ(pool.size(), 1);
  EXPECT_EQ(pool.recall("any", "Say something 99:"), (std::vector<std::string>{"use an e"}));
  bool saw = false;  // a second attempt showed the shared lesson
  for (const CritiqueRequest& q : critic.seen) saw |= q.prompt.rfind("Note from an earlier attempt: use an e\n", 0) == 0;
  EXPECT_TRUE(saw || r.attempts[1].n_tried == r.attempts[1].n_solved);
}

// The lessons stage (LANPO-style): one critique per group with no correct
// episode, asked with the task's prompt without lessons; the lesson is then
// shown in front of similar prompts; a prompt whose lesson would not leave
// the episode its room shows none (counted).
TEST(Lessons, LearnFromFailedGroupsShowInFrontOfSimilarPromptsWithinTheContext) {
  Fixture f;
  RecordingCritic critic;
  LessonOptions o;
  o.enabled = true;
  o.k = 2;
  o.min_similarity = 0.0;
  const int64_t context = f.policy.loaded.config.max_position_embeddings;
  LessonStage stage(*f.policy.tokenizer, context, 6, true, critic, o, "test tasks");
  std::vector<const PromptExample*> originals;
  for (const PromptExample& t : f.tasks) originals.push_back(&t);
  LessonStats st;
  std::vector<PromptExample> first = stage.show(originals, st);
  for (size_t i = 0; i < first.size(); ++i) EXPECT_EQ(first[i].prompt, f.tasks[i].prompt);  // an empty pool
  EXPECT_EQ(st.n_with_lessons, 0);

  std::vector<ScoredGroup> groups = f.groups(3);
  for (auto& r : groups[0].scores.results[0]) r.score = 0.0;  // group 0 fails whatever was sampled
  size_t failing = 0;
  for (const ScoredGroup& g : groups) {
    bool any = false;
    for (size_t i = 0; i < g.group.episodes.size(); ++i) any |= is_correct(g, 0, i);
    failing += !any;
  }
  stage.learn(groups, originals, 0, st);
  ASSERT_EQ(critic.seen.size(), failing);
  EXPECT_EQ(critic.seen[0].prompt, f.tasks[0].prompt);
  EXPECT_EQ(critic.seen[0].task, originals[0]);
  EXPECT_EQ(st.n_written, static_cast<int64_t>(failing));
  EXPECT_EQ(stage.pool().size(), 1);  // one text, kept once

  LessonStats st2;
  std::vector<PromptExample> shown = stage.show(originals, st2);
  for (size_t i = 0; i < shown.size(); ++i) {
    EXPECT_EQ(shown[i].prompt, "Lesson: use an e\n" + f.tasks[i].prompt);
    EXPECT_EQ(shown[i].id, f.tasks[i].id);
  }
  EXPECT_EQ(st2.n_with_lessons, static_cast<int64_t>(shown.size()));
  EXPECT_EQ(st2.n_shown, static_cast<int64_t>(shown.size()));

  // Room for the prompt alone: the lesson is cut.
  const int64_t n_prompt = static_cast<int64_t>(f.policy.tokenizer->encode(f.tasks[0].prompt, true).size());
  LessonStage tight(*f.policy.tokenizer, context, context - n_prompt, true, critic, o, "test tasks");
  tight.pool().add("x", f.tasks[1].prompt, "use an e");
  LessonStats st3;
  EXPECT_EQ(tight.show({originals[0]}, st3)[0].prompt, f.tasks[0].prompt);
  EXPECT_EQ(st3.n_cut, 1);
  EXPECT_EQ(st3.n_with_lessons, 0);
}

}  // namespace
}  // namespace rlf

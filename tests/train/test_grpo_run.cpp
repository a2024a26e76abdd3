// End-to-end runs on a tiny random model (synthetic arithmetic, math reward;
// a guessing game for multi-turn): the loop runs, parameters move, the
// trainer's log-probs equal the rollout's, N steps straight equal N/2 + resume
// + N/2 bit for bit (fp32, single- and multi-turn), a bf16 warm-started run
// keeps the warmed weights, the KL reference is the policy as RL starts, SFT
// runs on its own, config errors name the key, prompts too long for the
// context are bad records, and resuming a finished run writes nothing.
#include <gtest/gtest.h>

#include <functional>
#include <utility>

#include "model/loader.h"
#include "tests/support/test_env.h"
#include "tests/train/run_fixtures.h"
#include "config/config_schema.h"
#include "train/metrics.h"
#include "train/train_run.h"
#include "util/fs.h"

namespace rlf {
namespace {

using test::ConfigAt;
using test::expect_same_parameters;
using test::grpo_run_config;
using test::make_tiny_model;
using test::straight_and_resumed;


TEST(GrpoRun, ResumeContinuesExactly) {
  test::TempDir dir;
  auto model = make_tiny_model(dir);
  auto [ma, mb] = straight_and_resumed(
      [&](const std::filesystem::path& out, int64_t steps) {
        return train_config_from_json(grpo_run_config(model, out, steps), "grpo");
      },
      dir, 4, 2, {"policy"});
  ASSERT_EQ(ma.size(), 4u);
  ASSERT_EQ(mb.size(), 4u);
  for (size_t i = 0; i < ma.size(); ++i) {
    EXPECT_EQ(ma[i]["reward/mean"], mb[i]["reward/mean"]) << "step " << i + 1;
    // The trainer's first forward of each step reproduces the rollout's log-probs (fp32).
    EXPECT_LT(ma[i]["policy/logprob_diff_max"].get<double>(), 1e-4) << "step " << i + 1;
  }
  EXPECT_TRUE(std::filesystem::exists(dir / "a/plot.html"));
  EXPECT_TRUE(std::filesystem::exists(dir / "a/samples.jsonl"));
  EXPECT_TRUE(std::filesystem::exists(dir / "a/summary.json"));
}

// Top-k rollouts (trainer.sampling_replay): replayed, the old and the
// trainer's log-probs both renormalise over the kept sets (they agree: a
// trainer that did not would be apart by the sets' log-mass) and the
// sampler's KL to the learner is 0; not replayed, both measure the whole
// vocabulary's distribution, not the one sampled, and rollout/sampler_kl
// says how far. "on" where no top_k bounds the sets is an error naming the keys.
TEST(GrpoRun, SamplingReplayMakesTruncatedSamplingAgree) {
  test::TempDir dir;
  auto model = make_tiny_model(dir);
  TrainRunOptions quiet;
  quiet.quiet = true;
  Json metrics[2];
  for (int replay = 0; replay < 2; ++replay) {
    Json j = grpo_run_config(model, dir / ("run" + std::to_string(replay)), 2);
    j["rollout"]["top_k"] = 8;
    j["trainer"]["sampling_replay"] = replay ? "auto" : "off";
    metrics[replay] = run_training(train_config_from_json(j, "replay"), quiet).last_metrics;
  }
  EXPECT_LT(metrics[1]["policy/logprob_diff_max"].get<double>(), 1e-4);
  EXPECT_LT(metrics[1]["rollout/sampler_kl"].get<double>(), 1e-5);
  EXPECT_EQ(metrics[1]["rollout/kept_ids_mean"].get<double>(), 8.0);
  // Not replayed: both sides compute the whole vocabulary's log-probs (equal numbers), which is not the
  // distribution the tokens were drawn from.
  EXPECT_LT(metrics[0]["policy/logprob_diff_max"].get<double>(), 1e-4);
  EXPECT_GT(metrics[0]["rollout/sampler_kl"].get<double>(), 1e-2);
  EXPECT_FALSE(metrics[0].contains("rollout/kept_ids_mean"));

  Json on = grpo_run_config(model, dir / "on", 1);
  on["rollout"]["top_p"] = 0.9;
  on["trainer"]["sampling_replay"] = "on";
  test::expect_config_error(on, "rollout.top_k must bound it");
  on["rollout"]["top_k"] = 20;
  on["rollout"]["temperature"] = 0.0;
  test::expect_config_error(on, "rollout.temperature is 0");
  on["trainer"]["sampling_replay"] = "sometimes";
  test::expect_config_error(on, "trainer.sampling_replay' must be one of auto, on, off");
}

// Critique credit on the addition task with the column critic: failed
// episodes are critiqued, their wrong column marked, those tokens' advantage
// moved (the formula and the spans are tested in test_feedback); a critic
// that marks no spans is refused, naming the keys.
TEST(GrpoRun, SpanCreditCritiquesFailedEpisodesAndMarksTokens) {
  test::TempDir dir;
  auto model = make_tiny_model(dir);
  Json j = grpo_run_config(model, dir / "run", 2);
  j["data"]["arithmetic"]["operations"] = "+";
  j["critic"]["type"] = "columns";
  j["span_credit"] = {{"enabled", true}, {"coef", 0.5}};
  TrainRunOptions quiet;
  quiet.quiet = true;
  const Json m = run_training(train_config_from_json(j, "span"), quiet).last_metrics;
  EXPECT_GT(m["span_credit/critiques"].get<double>(), 0.0);
  EXPECT_EQ(m["span_credit/critic_failures"].get<double>(), 0.0);
  EXPECT_GT(m["span_credit/with_spans"].get<double>(), 0.0);
  EXPECT_GT(m["span_credit/flagged_tokens"].get<double>(), 0.0);
  EXPECT_GT(m["span_credit/flagged_share"].get<double>(), 0.0);
  EXPECT_LE(m["span_credit/flagged_share"].get<double>(), 1.0);

  j["critic"]["type"] = "simple_gt";
  test::expect_config_error(j, "span_credit.enabled needs a critic that marks spans");
  j["critic"]["type"] = "columns";
  j["span_credit"]["episodes"] = "some";
  test::expect_config_error(j, "span_credit.episodes");
}

TEST(GrpoRun, ConfigErrorsNameTheKey) {
  auto expect_error = [](Json j, const std::string& needle) {
    try {
      train_config_from_json(j, "cfg.toml");
      ADD_FAILURE() << "no error for " << needle;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  Json ok = grpo_run_config("/m", "/o", 2);
  Json bad = ok;
  bad["rollout"]["group_sise"] = 4;
  expect_error(bad, "unknown key 'rollout.group_sise'");
  bad = ok;
  bad["algorithm"]["advantage"] = "ppo";
  expect_error(bad, "algorithm.advantage");
  bad = ok;
  bad.erase("model");
  expect_error(bad, "missing required key 'model.path'");
  bad = ok;
  bad["reward"] = Json::array();
  expect_error(bad, "no reward configured: add at least one [[reward]] table");
  bad = ok;
  bad["algorithm"]["eps_low"] = 1.5;
  expect_error(bad, "eps_low");
  bad = ok;
  bad["model"]["pack_weights"] = "no";
  expect_error(bad, "model.pack_weights");
  // model.pack_weights: on unless the config turns it off (CausalLMImpl::set_pack_weights)
  EXPECT_TRUE(train_config_from_json(ok, "cfg.toml").model.pack_weights);
  Json off = ok;
  off["model"]["pack_weights"] = false;
  EXPECT_FALSE(train_config_from_json(off, "cfg.toml").model.pack_weights);
}

Json sft_table() {
  return Json::parse(R"({"data": {"preset": "arithmetic", "arithmetic": {"n_problems": 40}}, "steps": 3,
                         "batch_size": 4, "micro_batch_size": 4, "lr": 0.01})");
}

TEST(GrpoRun, Bf16WarmStartKeepsTheWarmedWeightsAndTheReferenceIsThePolicyAsRlStarts) {
  test::TempDir dir;
  auto model = make_tiny_model(dir);
  Json j = grpo_run_config(model, dir / "run", 1);
  j["model"]["dtype"] = "bf16";
  j["sft"] = sft_table();
  j["optim"]["lr"] = 1e-30;  // the RL step moves nothing: what it writes back is the optimiser's masters
  j["algorithm"]["kl_beta"] = 1e-6;
  j["algorithm"]["epochs"] = 1;
  TrainRunOptions quiet;
  quiet.quiet = true;
  auto s = run_training(train_config_from_json(j, "bf16"), quiet);
  EXPECT_EQ(s.sft_steps, 3);
  // run/reference is the policy right after SFT; the RL step left it there (before the fix it wrote the
  // pre-SFT masters back).
  expect_same_parameters(dir / "run/checkpoints/step-1/model", dir / "run/reference");
  expect_same_parameters(dir / "run/reference", model, /*same=*/false);
}

TEST(GrpoRun, KlToTheRlStartIsZeroAtTheFirstStepAndInitialIsTheLoadedModel) {
  test::TempDir dir;
  auto model = make_tiny_model(dir);
  TrainRunOptions quiet;
  quiet.quiet = true;
  double kl[2];
  for (int k = 0; k < 2; ++k) {
    Json j = grpo_run_config(model, dir / ("run" + std::to_string(k)), 1);
    j["sft"] = sft_table();
    j["algorithm"]["kl_beta"] = 0.1;
    j["algorithm"]["epochs"] = 1;
    if (k == 1) j["algorithm"]["kl_reference"] = "initial";
    auto s = run_training(train_config_from_json(j, "kl"), quiet);
    kl[k] = s.last_metrics["kl/ref"].get<double>();
    EXPECT_EQ(std::filesystem::exists(dir / ("run" + std::to_string(k)) / "reference"), k == 0);
  }
  EXPECT_LT(std::abs(kl[0]), 1e-7) << "the reference is the policy as RL starts";
  EXPECT_GT(kl[1], 1e-4) << "the reference is the model before SFT";
}

// run.warm_start_cache: the first run trains the warm start and saves it (with
// run.sft_control, whose SFT control needs the warm start's optimiser, it
// trains its own and saves it too), the next loads it; both end with the
// weights of a run without the cache (the KL reference is the loaded warm
// start too).
TEST(GrpoRun, ACachedWarmStartGivesTheSameRun) {
  test::TempDir dir;
  auto model = make_tiny_model(dir);
  TrainRunOptions quiet;
  quiet.quiet = true;
  auto config = [&](const std::string& out, bool cache, bool control = false) {
    Json j = grpo_run_config(model, dir / out, 2);
    j["sft"] = sft_table();
    j["algorithm"]["kl_beta"] = 0.1;
    if (cache) j["run"]["warm_start_cache"] = (dir / "cache").string();
    j["run"]["sft_control"] = control;
    return train_config_from_json(j, out);
  };
  auto plain = run_training(config("plain", false), quiet);
  auto first = run_training(config("first", true, /*control=*/true), quiet);
  EXPECT_GE(first.pass1_control, 0.0);
  ASSERT_TRUE(std::filesystem::exists(dir / "cache")) << "a run with run.sft_control saves its warm start";
  auto second = run_training(config("second", true), quiet);
  EXPECT_EQ(plain.sft_steps, 3);
  EXPECT_EQ(second.sft_steps, 3);
  size_t n_entries = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir / "cache")) n_entries += e.is_directory();
  EXPECT_EQ(n_entries, 1u);
  expect_same_parameters(dir / "plain/checkpoints/step-2/model", dir / "first/checkpoints/step-2/model");
  expect_same_parameters(dir / "plain/checkpoints/step-2/model", dir / "second/checkpoints/step-2/model");
  expect_same_parameters(dir / "plain/reference", dir / "second/reference");
  EXPECT_EQ(plain.last_metrics["reward/mean"], second.last_metrics["reward/mean"]);
}

TEST(TrainKinds, SftRunsOnItsOwn) {
  test::TempDir dir;
  auto model = make_tiny_model(dir);
  auto sft_config = [&](const std::filesystem::path& out, int64_t steps) {
    Json j = grpo_run_config(model, out, steps);
    j["trainer"]["kind"] = "sft";
    j["sft"] = {{"data", {{"preset", "arithmetic"}, {"arithmetic", {{"n_problems", 40}}}}}, {"batch_size", 8},
                {"micro_batch_size", 3}};
    j["optim"]["lr"] = 0.003;
    return j;
  };
  // Straight, and resumed exactly (dir/a, dir/b).
  auto m = straight_and_resumed(
               [&](const std::filesystem::path& out, int64_t steps) {
                 return train_config_from_json(sft_config(out, steps), "sft");
               },
               dir, 6, 3, {"ce"})
               .first;
  const Json s = read_json_file((dir / "a/summary.json").string());
  EXPECT_EQ(s["kind"], "sft");
  EXPECT_EQ(s["steps"], 6);
  ASSERT_TRUE(s["pass1_before"].is_number() && s["pass1_after"].is_number()) << s.dump();
  test::expect_pass1_over(s["pass1_before"].get<double>(), 4, "pass1_before");  // data.eval_size = 4
  test::expect_pass1_over(s["pass1_after"].get<double>(), 4, "pass1_after");
  ASSERT_EQ(m.size(), 6u);
  EXPECT_LT(m.back()["loss/ce"].get<double>(), m.front()["loss/ce"].get<double>()) << "SFT should lower the loss";
  EXPECT_FALSE(m.back().contains("policy/loss"));
  EXPECT_TRUE(std::filesystem::exists(dir / "a/checkpoints/step-6/model/config.json"));
  // With a kl term the SFT run stays near the model as loaded: the reference log-probs travel with the pairs.
  Json j = sft_config(dir / "kl", 6);
  j["algorithm"]["kl_beta"] = 0.5;
  auto k = run_training(train_config_from_json(j, "sft with kl"), test::quiet_run());
  EXPECT_GT(k.last_metrics["kl/ref"].get<double>(), 0.0);
  EXPECT_TRUE(k.last_metrics.contains("loss/kl"));
}

Json guess_config(const std::filesystem::path& model, const std::filesystem::path& out, int64_t steps) {
  Json j = Json::parse(R"({
    "data": {"preset": "guess", "eval_size": 4, "guess": {"n_problems": 30, "max_number": 8}},
    "env": {"type": "guess", "max_turns": 3, "turn_penalty": 0.1},
    "rollout": {"prompts_per_step": 2, "group_size": 3, "max_new_tokens": 4},
    "algorithm": {"micro_batch_size": 4, "credit": "turn", "gamma": 0.9, "mini_batches": 2},
    "optim": {"lr": 0.001},
    "run": {"checkpoint_every": 2, "samples_every": 1, "seed": 3}
  })");
  j["model"]["path"] = model.string();
  j["run"]["out_dir"] = out.string();
  j["run"]["steps"] = steps;
  return j;
}

TEST(GrpoRun, MultiTurnRunResumesExactly) {
  test::TempDir dir;
  auto model = make_tiny_model(dir);
  auto [ma, mb] = straight_and_resumed(
      [&](const std::filesystem::path& out, int64_t steps) {
        return train_config_from_json(guess_config(model, out, steps), "guess");
      },
      dir, 4, 2, {"policy"});
  ASSERT_EQ(ma.size(), 4u);
  EXPECT_GT(ma.back()["episode/turns_mean"].get<double>(), 1.0) << "the game takes more than one turn";
  EXPECT_TRUE(ma.back().contains("reward/env/mean"));
  ASSERT_EQ(mb.size(), 4u);
  for (size_t i = 0; i < ma.size(); ++i) {
    EXPECT_EQ(ma[i]["reward/mean"], mb[i]["reward/mean"]) << "step " << i + 1;
    EXPECT_EQ(ma[i]["episode/turns_mean"], mb[i]["episode/turns_mean"]) << "step " << i + 1;
    EXPECT_LT(ma[i]["policy/logprob_diff_max"].get<double>(), 1e-4) << "step " << i + 1;
  }
  // The samples log shows whole transcripts.
  auto samples = read_jsonl(dir / "a/samples.jsonl");
  ASSERT_FALSE(samples.empty());
  EXPECT_TRUE(samples[0].contains("turns"));
}

// Critique-guided refinement in a whole run: critiques of failed episodes
// (here: no 'e' in the answer, the accuracy reward), refinements join their
// groups, the run resumes bit for bit, the samples log shows refinements with
// their critiques.
Json refine_config(const std::filesystem::path& model, const std::filesystem::path& out, int64_t steps) {
  Json j = grpo_run_config(model, out, steps);
  j["algorithm"]["accuracy_reward"] = "has_e";
  j["refine"] = {{"enabled", true}};
  j["critic"] = {{"type", "text"}};
  j["run"]["samples_per_step"] = 100;
  return j;
}

TEST(GrpoRun, RefinementRunResumesExactly) {
  test::TempDir dir;
  auto model = make_tiny_model(dir);
  auto [ma, mb] = straight_and_resumed(
      [&](const std::filesystem::path& out, int64_t steps) {
        return train_config_from_json(refine_config(model, out, steps), "refine");
      },
      dir, 4, 2, {"policy"});
  ASSERT_EQ(ma.size(), 4u);
  ASSERT_EQ(mb.size(), 4u);
  double added = 0;
  for (size_t i = 0; i < ma.size(); ++i) {
    EXPECT_EQ(ma[i]["reward/mean"], mb[i]["reward/mean"]) << "step " << i + 1;
    EXPECT_EQ(ma[i]["refine/added"], mb[i]["refine/added"]) << "step " << i + 1;
    EXPECT_EQ(ma[i]["refine/critiques"].get<double>(), ma[i]["refine/failed"].get<double>());
    EXPECT_GE(ma[i]["accuracy/after_feedback"].get<double>(), ma[i]["accuracy/first_attempt"].get<double>());
    // Refinement tokens are left out of the rollout-agreement check.
    EXPECT_LT(ma[i]["policy/logprob_diff_max"].get<double>(), 1e-4) << "step " << i + 1;
    added += ma[i]["refine/added"].get<double>();
    // Every refinement that joined a group reaches the update (its group has a failure: a non-zero advantage).
    EXPECT_EQ(ma[i]["update/episodes_refinement"].get<double>(), ma[i]["refine/added"].get<double>());
    if (ma[i]["refine/added"].get<double>() > 0) {
      EXPECT_GT(ma[i]["policy/shaped_frac"].get<double>(), 0.0);
      EXPECT_GT(ma[i]["update/share_refinement"].get<double>(), 0.0);
    }
  }
  EXPECT_GT(added, 0) << "no refinement joined a group in 4 steps";
  bool seen = false;
  for (const Json& s : read_jsonl(dir / "a/samples.jsonl"))
    if (s.value("source", "") == "refinement") {
      seen = true;
      EXPECT_EQ(s["critique"].get<std::string>().rfind("The answer is incorrect.", 0), 0u) << s.dump();
    }
  EXPECT_TRUE(seen) << "the samples log shows no refinement";
}

// Experience replay in a whole run: successes are stored, groups without
// one get them, and the buffer is checkpointed, so 3 + resume + 3 steps
// equal 6 straight.
TEST(GrpoRun, ReplayRunResumesExactlyWithItsBuffer) {
  test::TempDir dir;
  auto model = make_tiny_model(dir);
  TrainRunOptions quiet;
  quiet.quiet = true;
  auto config = [&](const std::filesystem::path& out, int64_t steps) {
    Json j = grpo_run_config(model, out, steps);
    j["data"]["arithmetic"]["n_problems"] = 8;  // 4 training tasks, 2 per step: each comes back every 2 steps
    j["algorithm"]["accuracy_reward"] = "has_e";
    j["algorithm"]["off_policy_ratio_cap"] = 2.0;
    j["replay"] = {{"enabled", true}};
    return train_config_from_json(j, "replay");
  };
  auto [ma, mb] = straight_and_resumed(config, dir, 6, 3, {"policy"});
  ASSERT_EQ(ma.size(), 6u);
  double injected = 0;
  for (size_t i = 0; i < ma.size(); ++i) {
    EXPECT_EQ(ma[i]["replay/size"], mb[i]["replay/size"]) << "step " << i + 1;
    EXPECT_EQ(ma[i]["replay/injected"], mb[i]["replay/injected"]) << "step " << i + 1;
    EXPECT_LT(ma[i]["policy/logprob_diff_max"].get<double>(), 1e-4) << "step " << i + 1;
    injected += ma[i]["replay/injected"].get<double>();
  }
  EXPECT_GT(ma.back()["replay/size"].get<double>(), 0.0);
  EXPECT_GT(injected, 0.0) << "no group was given a stored success in 6 steps";
  // A run without replay cannot be resumed with it.
  TrainRunOptions resume = quiet;
  resume.resume = true;
  Json j = grpo_run_config(model, dir / "c", 2);
  run_training(train_config_from_json(j, "plain"), quiet);
  j["run"]["steps"] = 4;
  j["replay"] = {{"enabled", true}};
  EXPECT_NE(test::error_of([&] { run_training(train_config_from_json(j, "plain"), resume); })
                .find("a run that did not replay cannot be resumed with replay"),
            std::string::npos);
}

// Lessons in rollout prompts (LANPO-style) in a whole run: failed groups'
// critiques go into the pool, later prompts show the lessons of similar
// tasks, and the pool is checkpointed, so 3 + resume + 3 steps equal 6
// straight.
TEST(GrpoRun, LessonRunShowsLessonsAndResumesExactlyWithItsPool) {
  test::TempDir dir;
  auto model = make_tiny_model(dir);
  TrainRunOptions quiet;
  quiet.quiet = true;
  auto config = [&](const std::filesystem::path& out, int64_t steps) {
    Json j = grpo_run_config(model, out, steps);
    j["lessons"] = {{"enabled", true}, {"k", 2}, {"min_similarity", 0.0}};
    j["critic"] = {{"type", "simple_gt"}};
    return train_config_from_json(j, "lessons");
  };
  auto [ma, mb] = straight_and_resumed(config, dir, 6, 3, {"policy"});
  ASSERT_EQ(ma.size(), 6u);
  double written = 0, shown = 0;
  for (size_t i = 0; i < ma.size(); ++i) {
    EXPECT_EQ(ma[i]["lessons/pool_size"], mb[i]["lessons/pool_size"]) << "step " << i + 1;
    EXPECT_EQ(ma[i]["reward/mean"], mb[i]["reward/mean"]) << "step " << i + 1;
    EXPECT_LT(ma[i]["policy/logprob_diff_max"].get<double>(), 1e-4) << "step " << i + 1;
    written += ma[i]["lessons/written"].get<double>();
    shown += ma[i]["lessons/shown_per_prompt"].get<double>();
  }
  EXPECT_EQ(ma[0]["lessons/shown_per_prompt"].get<double>(), 0.0);  // nothing learnt before the first step
  EXPECT_GT(written, 0.0) << "no lesson was written in 6 steps";
  EXPECT_GT(shown, 0.0) << "no prompt showed a lesson in 6 steps";
  bool seen = false;
  for (const Json& s : read_jsonl(dir / "a/samples.jsonl"))
    seen |= s.value("prompt", "").rfind("Lesson: ", 0) == 0;
  EXPECT_TRUE(seen) << "the samples log shows no prompt with a lesson";
  // A run without lessons cannot be resumed with them.
  TrainRunOptions resume = quiet;
  resume.resume = true;
  Json j = grpo_run_config(model, dir / "c", 2);
  run_training(train_config_from_json(j, "plain"), quiet);
  j["run"]["steps"] = 4;
  j["lessons"] = {{"enabled", true}};
  j["critic"] = {{"type", "simple_gt"}};
  EXPECT_NE(test::error_of([&] { run_training(train_config_from_json(j, "plain"), resume); })
                .find("a run without lessons cannot be resumed with them"),
            std::string::npos);
  j["lessons"] = {{"enabled", true}, {"line", "no placeholder"}};
  EXPECT_NE(test::error_of([&] { train_config_from_json(j, "run.toml"); })
                .find("lessons.line must contain {lesson} (got \"no placeholder\")"),
            std::string::npos);
}

// Self-distillation in a whole run: the teacher (the policy with the answer
// in front) gives log-probs, the distill term trains on them, and the run
// resumes bit for bit.
TEST(GrpoRun, SelfDistillationRunResumesExactly) {
  test::TempDir dir;
  auto model = make_tiny_model(dir);
  auto config = [&](const std::filesystem::path& out, int64_t steps) {
    Json j = grpo_run_config(model, out, steps);
    j["distill"] = {{"enabled", true}, {"coef", 0.5}, {"context", "The answer is {reference}. {prompt}"}};
    return train_config_from_json(j, "distill");
  };
  auto m = straight_and_resumed(config, dir, 4, 2, {"policy", "distill"}).first;
  ASSERT_EQ(m.size(), 4u);
  for (const Json& r : m) {
    EXPECT_EQ(r["distill/episodes"].get<double>(), 8.0);  // 2 prompts x 4 episodes
    EXPECT_GT(r["distill/kl"].get<double>(), 0.0);
    EXPECT_GT(r["loss/distill"].get<double>(), 0.0);
  }
}

// Self-distillation with privileged feedback in a whole run: the frozen
// teacher (the run's reference) reads the episode's attempt and the critic's
// words on it; the run asks for the reference although kl_beta is 0 (but
// computes no reference log-probs: no term reads them), and resumes bit for bit.
TEST(GrpoRun, FrozenCritiqueTeacherRunResumesExactly) {
  test::TempDir dir;
  auto model = make_tiny_model(dir);
  auto config = [&](const std::filesystem::path& out, int64_t steps) {
    Json j = grpo_run_config(model, out, steps);
    j["distill"] = {{"enabled", true}, {"coef", 0.5}, {"teacher", "frozen"}, {"top_k", 4},
                    {"context", "{prompt}{response}\n{critique}\n"}};
    j["critic"] = {{"type", "text"}};
    return train_config_from_json(j, "distill");
  };
  auto m = straight_and_resumed(config, dir, 4, 2, {"policy", "distill"}).first;
  ASSERT_EQ(m.size(), 4u);
  for (const Json& r : m) {
    EXPECT_EQ(r["distill/episodes"].get<double>() + r["distill/skipped"].get<double>(), 8.0);
    EXPECT_GT(r["distill/episodes"].get<double>(), 0.0);
    EXPECT_EQ(r["distill/critic_failures"].get<double>(), 0.0);
    EXPECT_GT(r["loss/distill"].get<double>(), 0.0);
    EXPECT_TRUE(r.contains("update/share_rollout"));
    EXPECT_EQ(r["kl/ref"].get<double>(), 0.0);  // the episodes carried no reference log-probs
  }
  Json j = grpo_run_config(model, dir / "bad", 2);
  j["distill"] = {{"enabled", true}, {"context", "{prompt}\n{critique}\n"}};
  EXPECT_NE(test::error_of([&] { train_config_from_json(j, "run.toml"); })
                .find("distill.context with {critique} needs a [critic] section"),
            std::string::npos);
}

// The EMA teacher in a whole run: the teacher reads an exponential moving
// average of the policy's weights, updated after every optimiser step and
// saved with each checkpoint (DIR/step-N/ema/model), so 2 steps + resume + 2
// steps equal 4 straight, the policy's weights and the average's alike; the
// average moved after the resume and lags behind the policy.
TEST(GrpoRun, EmaTeacherRunResumesExactly) {
  test::TempDir dir;
  auto model = make_tiny_model(dir);
  auto config = [&](const std::filesystem::path& out, int64_t steps) {
    Json j = grpo_run_config(model, out, steps);
    j["distill"] = {{"enabled", true}, {"coef", 0.5}, {"teacher", "ema"}, {"ema_decay", 0.5},
                    {"context", "The answer is {reference}. {prompt}"}};
    return train_config_from_json(j, "distill");
  };
  auto m = straight_and_resumed(config, dir, 4, 2, {"policy", "distill"}).first;
  ASSERT_EQ(m.size(), 4u);
  for (const Json& r : m) {
    EXPECT_EQ(r["distill/episodes"].get<double>(), 8.0);  // 2 prompts x 4 episodes
    EXPECT_GT(r["loss/distill"].get<double>(), 0.0);
  }
  const auto a = dir / "a/checkpoints/step-4", b = dir / "b/checkpoints/step-4";
  expect_same_parameters(a / "ema/model", b / "ema/model");
  expect_same_parameters(a / "model", a / "ema/model", false);  // the average lags behind the policy
  const Json manifest = read_json_file((b / "trainer.json").string());
  EXPECT_EQ(manifest["models"], Json::array({"ema"}));
  EXPECT_TRUE(manifest["files"].contains("ema/model/model.safetensors"));
  // A run saved without the average cannot be resumed with it; ema_decay is checked; LoRA trains no full weights.
  TrainRunOptions resume = test::quiet_run();
  resume.resume = true;
  Json j = grpo_run_config(model, dir / "c", 2);
  run_training(train_config_from_json(j, "plain"), test::quiet_run());
  j["run"]["steps"] = 4;
  j["distill"] = {{"enabled", true}, {"teacher", "ema"}};
  EXPECT_NE(test::error_of([&] { run_training(train_config_from_json(j, "plain"), resume); })
                .find("saved models [] differ from the ones to restore [\"ema\"]"),
            std::string::npos);
  j["distill"]["ema_decay"] = 1.0;
  EXPECT_NE(test::error_of([&] { train_config_from_json(j, "run.toml"); })
                .find("distill.ema_decay must be in (0, 1) (got 1"),
            std::string::npos);
  j["distill"]["ema_decay"] = 0.9;
  j["lora"] = {{"enabled", true}};
  EXPECT_NE(test::error_of([&] { train_config_from_json(j, "run.toml"); })
                .find("lora.enabled: distill.teacher = \"ema\" averages the policy's full weights"),
            std::string::npos);
}

// distill.guard = "verifier_sign" in a whole run (sampled-token k2): the
// guard drops some distill tokens and not all, and the term still trains.
TEST(GrpoRun, VerifierSignGuardDropsTheDisagreeingTokens) {
  test::TempDir dir;
  auto model = make_tiny_model(dir);
  Json j = grpo_run_config(model, dir / "run", 2);
  j["distill"] = {{"enabled", true}, {"coef", 0.5}, {"guard", "verifier_sign"},
                  {"context", "The answer is {reference}. {prompt}"}};
  run_training(train_config_from_json(j, "guard"), test::quiet_run());
  const auto m = read_jsonl(dir / "run" / "metrics.jsonl");
  ASSERT_EQ(m.size(), 2u);
  for (const Json& r : m) {
    EXPECT_GT(r["distill/guard_dropped"].get<double>(), 0.0);
    EXPECT_LT(r["distill/guard_dropped"].get<double>(), 1.0);
    EXPECT_GT(r["loss/distill"].get<double>(), 0.0);
  }
}

// On-policy distillation from another model directory with the teacher's
// top-k + tail: the teacher is a second tiny model (same tokenizer), the
// term compares distributions (forward KL), tail masses are reported, the
// held-out KL to it is measured before and after, and the run resumes bit
// for bit.
TEST(GrpoRun, TopKDistillationFromAModelRunResumesExactly) {
  test::TempDir dir;
  auto model = make_tiny_model(dir);
  ModelConfig c = ModelConfig::preset("stories260K");  // make_tiny_model's shape, other weights
  c.num_hidden_layers = 2;
  SaveOptions so;
  so.tokenizer_source = test::shared_path("models/stories260K/tok512.bin");
  const auto teacher = dir / "teacher";
  save_model(*make_random_model(c, 2, torch::kFloat32, torch::kCPU), teacher, so);
  auto config = [&](const std::filesystem::path& out, int64_t steps) {
    Json j = grpo_run_config(model, out, steps);
    j["distill"] = {{"enabled", true}, {"teacher", "model"}, {"teacher_path", teacher.string()},
                    {"top_k", 4}, {"divergence", "forward_kl"}};
    return train_config_from_json(j, "distill");
  };
  auto m = straight_and_resumed(config, dir, 4, 2, {"policy", "distill"}).first;
  ASSERT_EQ(m.size(), 4u);
  for (const Json& r : m) {
    EXPECT_EQ(r["distill/episodes"].get<double>(), 8.0);
    EXPECT_GT(r["distill/kl"].get<double>(), 0.0);
    EXPECT_GT(r["distill/teacher_tail"].get<double>(), 0.0);
    EXPECT_LT(r["distill/teacher_tail"].get<double>(), 1.0);
  }
  Json j = grpo_run_config(model, dir / "kl", 1);
  j["run"]["eval_kl_model"] = teacher.string();
  const auto s = run_training(train_config_from_json(j, "kl"), test::quiet_run());
  EXPECT_GT(s.kl_to_model_before, 0.0);  // two different random models
  EXPECT_GT(s.kl_to_model_after, 0.0);
  EXPECT_TRUE(s.to_json().contains("kl_to_model_after"));
}

// run.rollout_token_budget ends RL once the steps generated that many tokens;
// the count is checkpointed, so a resume neither forgets nor repeats it.
TEST(GrpoRun, RolloutTokenBudgetEndsTheRunAndSurvivesResume) {
  test::TempDir dir;
  auto model = make_tiny_model(dir);
  TrainRunOptions quiet;
  quiet.quiet = true;
  Json j = grpo_run_config(model, dir / "a", 50);
  j["run"]["rollout_token_budget"] = 100;  // a step generates at most 2 x 4 x 8 = 64 tokens
  auto s = run_training(train_config_from_json(j, "budget"), quiet);
  EXPECT_GE(s.rollout_tokens, 100);
  EXPECT_LT(s.rollout_tokens, 100 + 64);
  EXPECT_LT(s.steps, 50);
  auto m = read_jsonl(dir / "a/metrics.jsonl");
  ASSERT_EQ(static_cast<int64_t>(m.size()), s.steps);
  EXPECT_EQ(m.back()["rollout/tokens_total"].get<int64_t>(), s.rollout_tokens);
  EXPECT_TRUE(std::filesystem::exists(dir / ("a/checkpoints/step-" + std::to_string(s.steps))));
  TrainRunOptions resume = quiet;
  resume.resume = true;
  auto again = run_training(train_config_from_json(j, "budget again"), resume);
  EXPECT_EQ(again.steps, s.steps);
  EXPECT_EQ(again.rollout_tokens, s.rollout_tokens);
  EXPECT_EQ(read_jsonl(dir / "a/metrics.jsonl").size(), m.size());
}

TEST(GrpoRun, ResumingAFinishedRunWritesNoCheckpoint) {
  test::TempDir dir;
  auto model = make_tiny_model(dir);
  TrainRunOptions quiet;
  quiet.quiet = true;
  run_training(train_config_from_json(grpo_run_config(model, dir / "r", 2), "first"), quiet);
  const auto trainer_json = dir / "r/checkpoints/step-2/trainer.json";
  const auto before = std::filesystem::last_write_time(trainer_json);
  TrainRunOptions resume = quiet;
  resume.resume = true;
  auto s = run_training(train_config_from_json(grpo_run_config(model, dir / "r", 2), "again"), resume);
  EXPECT_EQ(s.steps, 2);
  EXPECT_EQ(std::filesystem::last_write_time(trainer_json), before) << "the finished checkpoint was written again";
}

TEST(GrpoRun, PromptsTooLongForTheContextAreBadRecords) {
  test::TempDir dir;
  auto model = make_tiny_model(dir);
  {
    std::string lines = "{\"prompt\": \"What is 2 + 2?\", \"answer\": \"4\"}\n";
    lines += "{\"prompt\": \"" + std::string(3000, 'a') + "\", \"answer\": \"1\"}\n";
    lines += "{\"prompt\": \"What is 3 + 3?\", \"answer\": \"6\"}\n";
    write_file_atomic(dir / "data.jsonl", lines);
  }
  Json j = grpo_run_config(model, dir / "long", 1);
  j["data"] = {{"path", (dir / "data.jsonl").string()}};
  j["reward"] = Json::parse(R"([{"type": "math"}])");
  TrainRunOptions quiet;
  quiet.quiet = true;
  const std::string err = test::error_of([&] { run_training(train_config_from_json(j, "long"), quiet); });
  EXPECT_NE(err.find("data.jsonl' line 2: the prompt has "), std::string::npos) << err;
  EXPECT_NE(err.find("set data.on_bad_record = \"skip\""), std::string::npos) << err;
  j["data"]["on_bad_record"] = "skip";
  auto s = run_training(train_config_from_json(j, "long"), quiet);
  EXPECT_EQ(s.last_metrics["data/skipped_records"].get<double>(), 1.0);
}

TEST(GrpoRun, TheCountdownTaskTrainsWithRlfTrain) {
  test::TempDir dir;
  auto model = make_tiny_model(dir);
  Json j = grpo_run_config(model, dir / "cd", 1);
  j["data"] = Json::parse(R"({"preset": "countdown", "eval_size": 4, "countdown": {"n_problems": 30}})");
  j["reward"] = Json::parse(R"([{"type": "countdown"}])");
  TrainRunOptions quiet;
  quiet.quiet = true;
  auto s = run_training(train_config_from_json(j, "countdown"), quiet);
  EXPECT_EQ(s.steps, 1);
  EXPECT_TRUE(s.last_metrics.contains("reward/countdown/mean"));
}

TEST(ConfigKeys, EveryNumericKeyHasARangeAndRejectsValuesOutsideIt) {
  const Json ok = grpo_run_config("/m", "/o", 2);
  int checked = 0;
  for (const SchemaEntry& e : train_config_schema()) {
    if (e.type != OptionType::Int && e.type != OptionType::Float) continue;
    ASSERT_TRUE(e.range.has_value()) << e.key << " has no range";
    const auto [lo, hi] = *e.range;
    std::vector<Json> bad_values;
    if (e.type == OptionType::Int) {
      bad_values = {Json(static_cast<int64_t>(lo) - 1),
                    Json(static_cast<int64_t>(std::min(hi + std::max(1.0, hi * 1e-3), 9.22e18)))};
    } else {
      bad_values = {Json(lo > 0 ? 0.0 : lo - 1.0), Json(hi * 2 + 1)};
    }
    for (const Json& v : bad_values) {
      Json j = ok;
      std::string ptr = "/" + e.key;
      std::replace(ptr.begin(), ptr.end(), '.', '/');
      j[Json::json_pointer(ptr)] = v;
      const std::string err = test::error_of([&] { train_config_from_json(j, "cfg.toml"); });
      EXPECT_NE(err.find("cfg.toml: key '" + e.key + "' must be in ["), std::string::npos) << err;
      EXPECT_EQ(err.find('\n'), std::string::npos) << err;
      ++checked;
    }
  }
  EXPECT_GT(checked, 80);
}

TEST(GrpoRun, IncompatibleOptionsAreRefusedAtLoad) {
  Json ok = grpo_run_config("/m", "/o", 2);
  Json bad = ok;
  bad["rollout"]["group_size"] = 1;
  test::expect_config_error(bad, "rollout.group_size = 1 gives every episode a group of its own, so algorithm.advantage = \"grpo\"");
  bad["algorithm"]["advantage"] = "reinforce_pp";
  EXPECT_NO_THROW(train_config_from_json(bad, "cfg.toml"));
  bad = ok;
  bad["algorithm"]["credit"] = "turn";
  bad["algorithm"]["reward_aggregation"] = "normalize_then_sum";
  test::expect_config_error(bad, "algorithm.credit = \"turn\" needs algorithm.reward_aggregation = \"sum_then_normalize\"");
  bad = ok;
  bad["trainer"]["kind"] = "sft";
  test::expect_config_error(bad, "trainer.kind = \"sft\" needs [sft.data]");
  bad["sft"] = sft_table();
  test::expect_config_error(bad, "sft.steps configures the warm start before RL");
  bad = ok;
  bad["run"]["sft_control"] = true;
  test::expect_config_error(bad, "run.sft_control compares RL (or DPO) with more SFT");
  bad = ok;
  bad["model"]["random_init"] = "demo";
  test::expect_config_error(bad, "model.path and model.random_init are both set");
  bad = ok;
  bad["optim"]["beta1"] = 1.5;
  test::expect_config_error(bad, "key 'optim.beta1' must be in [0, 0.999999], got 1.5");
  bad = ok;
  bad["algorithm"]["gamma"] = 1.5;
  test::expect_config_error(bad, "key 'algorithm.gamma' must be in [1e-09, 1], got 1.5");
  bad = ok;
  bad["run"]["seed"] = -1;
  test::expect_config_error(bad, "key 'run.seed' must be in [0, 9200000000000000000], got -1");
  bad = ok;
  bad["run"]["out_dir"] = "";
  test::expect_config_error(bad, "run.out_dir must not be empty");
  bad = ok;
  bad["run"]["steps"] = 1000000000000LL;
  bad["algorithm"]["epochs"] = 1000;
  test::expect_config_error(bad, "is too many optimiser steps");
  bad = ok;
  bad["env"] = {{"type", "calculator"}, {"max_turns", -1}};
  test::expect_config_error(bad, "env.max_turns must be > 0 (got -1)");
  bad = ok;
  bad["reward"] = Json::array();
  bad["env"] = {{"type", "guess"}};
  EXPECT_NO_THROW(train_config_from_json(bad, "cfg.toml")) << "an environment that gives rewards needs no [[reward]]";
}

TEST(GrpoRun, ResumingWithMoreStepsKeepsTheScheduleHorizon) {
  test::TempDir dir;
  auto model = make_tiny_model(dir);
  TrainRunOptions quiet;
  quiet.quiet = true;
  Json j = grpo_run_config(model, dir / "r", 2);
  j["optim"]["schedule"] = "cosine";
  j["optim"]["lr_min"] = 1e-4;
  run_training(train_config_from_json(j, "first"), quiet);  // 2 steps x 2 epochs: a horizon of 4 optimiser steps
  j["run"]["steps"] = 4;
  TrainRunOptions resume = quiet;
  resume.resume = true;
  auto s = run_training(train_config_from_json(j, "longer"), resume);
  EXPECT_EQ(s.steps, 4);
  // Past the original horizon the cosine schedule sits at lr_min (re-planned over 8 it would not).
  EXPECT_DOUBLE_EQ(s.last_metrics["optim/lr"].get<double>(), 1e-4);
}

TEST(GrpoRun, AStepWithNoRewardReportsItMissingNotZero) {
  test::TempDir dir;
  auto model = make_tiny_model(dir);
  Json j = grpo_run_config(model, dir / "m", 1);
  // A scorer that can judge nothing: every score null.
  j["reward"] = Json::array({{{"type", "external"},
                              {"command", {"/usr/bin/python3", "-c",
                                           "import json, sys\nfor l in sys.stdin:\n r = json.loads(l)\n "
                                           "print(json.dumps({'id': r['id'], 'scores': [None] * len(r['completions'])}), "
                                           "flush=True)\n"}},
                              {"echo_stderr", false}}});
  TrainRunOptions quiet;
  quiet.quiet = true;
  auto s = run_training(train_config_from_json(j, "missing"), quiet);
  EXPECT_FALSE(s.last_metrics.contains("reward/mean")) << s.last_metrics.dump();
  EXPECT_FALSE(s.last_metrics.contains("accuracy"));
  EXPECT_EQ(s.last_metrics["reward/missing"].get<int64_t>(), 8);
}

}  // namespace
}  // namespace rlf

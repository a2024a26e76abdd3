// Whole preference and rejection-sampling runs on a tiny random model:
// offline DPO learns a preference that generalises to held-out pairs (margin
// and accuracy rise, the chosen responses' log-probs rise relative to the
// rejected ones), every loss of the family trains, DPO, online DPO and RAFT
// resume exactly (DPO's cached reference log-probs are recomputed
// identically), and config errors name the key.
#include <gtest/gtest.h>

#include "tests/support/test_env.h"
#include "tests/train/run_fixtures.h"
#include "train/train_config.h"
#include "train/train_run.h"
#include "util/fs.h"

namespace rlf {
namespace {

Json dpo_config(const std::filesystem::path& model, const std::filesystem::path& pairs, const std::filesystem::path& out,
                int64_t steps, const std::string& loss = "sigmoid") {
  Json j = Json::parse(R"({
    "trainer": {"kind": "dpo"},
    "preference": {"beta": 0.5, "batch_size": 8, "data": {"shuffle": true, "eval_size": 16}},
    "algorithm": {"micro_batch_size": 6},
    "optim": {"lr": 0.003},
    "run": {"checkpoint_every": 2, "seed": 3}
  })");
  j["preference"]["loss"] = loss;
  if (loss == "simpo") j["preference"]["beta"] = 2.0;
  j["model"]["path"] = model.string();
  j["preference"]["data"]["path"] = pairs.string();
  j["run"]["out_dir"] = out.string();
  j["run"]["steps"] = steps;
  return j;
}

TEST(PreferenceRun, DpoLearnsAPreferenceThatHoldsOnHeldOutPairs) {
  test::TempDir dir;
  const auto model = test::make_tiny_model(dir);
  const auto pairs = test::write_cat_pairs(dir, 96);
  TrainRunOptions quiet;
  quiet.quiet = true;
  TrainRunSummary s = run_training(train_config_from_json(dpo_config(model, pairs, dir / "dpo", 30), "dpo"), quiet);
  EXPECT_EQ(s.kind, "dpo");
  ASSERT_TRUE(s.preference_before.is_object());
  ASSERT_TRUE(s.preference_after.is_object());
  EXPECT_EQ(s.preference_before["pairs"], 16);
  // The policy starts as its reference: every implicit reward is 0 (accuracy 0: ties count 0).
  EXPECT_EQ(s.preference_before["margin"].get<double>(), 0.0);
  EXPECT_EQ(s.preference_before["accuracy"].get<double>(), 0.0);
  EXPECT_NEAR(s.preference_before["loss"].get<double>(), std::log(2.0), 1e-6) << "-log sigma(0)";
  EXPECT_GE(s.preference_after["accuracy"].get<double>(), 0.9) << s.preference_after.dump();
  EXPECT_GT(s.preference_after["margin"].get<double>(), 0.5) << s.preference_after.dump();
  EXPECT_LT(s.preference_after["loss"].get<double>(), 0.5) << s.preference_after.dump();
  EXPECT_GE(s.preference_after["logp_accuracy"].get<double>(), 0.9) << s.preference_after.dump();
  // Training metrics: per pair, logged every step.
  auto m = read_jsonl(dir / "dpo/metrics.jsonl");
  ASSERT_EQ(m.size(), 30u);
  EXPECT_EQ(m[0]["pref/pairs"], 8);
  EXPECT_GT(m.back()["pref/margin"].get<double>(), m.front()["pref/margin"].get<double>());
  EXPECT_LT(m.back()["loss/pref"].get<double>(), m.front()["loss/pref"].get<double>());
  const Json summary = Json::parse(read_file(dir / "dpo/summary.json"));
  EXPECT_EQ(summary["preference_after"], s.preference_after);
}

TEST(PreferenceRun, EveryLossOfTheFamilyTrains) {
  test::TempDir dir;
  const auto model = test::make_tiny_model(dir);
  const auto pairs = test::write_cat_pairs(dir, 64);
  TrainRunOptions quiet;
  quiet.quiet = true;
  for (const std::string loss : {"ipo", "hinge", "simpo", "sppo"}) {
    SCOPED_TRACE(loss);
    TrainRunSummary s =
        run_training(train_config_from_json(dpo_config(model, pairs, dir / loss, 12, loss), loss), quiet);
    const std::string trace = s.preference_before.dump() + " -> " + s.preference_after.dump();
    EXPECT_GE(s.preference_after["accuracy"].get<double>(), 0.9) << trace;
    EXPECT_GT(s.preference_after["margin"].get<double>(), s.preference_before["margin"].get<double>()) << trace;
    // The pairwise losses fall on held-out pairs too. SPPO's squared targets are absolute log-ratios
    // (+-1/(2 beta)), which held-out responses need not reach even when their order is learnt.
    if (loss != "sppo") {
      EXPECT_LT(s.preference_after["loss"].get<double>(), s.preference_before["loss"].get<double>()) << trace;
    }
  }
}

TEST(PreferenceRun, DpoResumesExactly) {
  test::TempDir dir;
  const auto model = test::make_tiny_model(dir);
  const auto pairs = test::write_cat_pairs(dir, 40);
  auto [ma, mb] = test::straight_and_resumed(
      [&](const std::filesystem::path& out, int64_t steps) {
        return train_config_from_json(dpo_config(model, pairs, out, steps), "dpo");
      },
      dir, 4, 2, {"pref"});
  ASSERT_EQ(ma.size(), 4u);
  ASSERT_EQ(mb.size(), 4u);
  for (size_t i = 0; i < 4; ++i) EXPECT_EQ(ma[i]["loss/pref"], mb[i]["loss/pref"]) << "step " << i + 1;
}

Json online_config(const std::filesystem::path& model, const std::filesystem::path& out, int64_t steps) {
  Json j = Json::parse(R"({
    "data": {"preset": "arithmetic", "eval_size": 4, "arithmetic": {"n_problems": 40}},
    "reward": [{"type": "format", "name": "has_e", "pattern": "e", "match": "search"}],
    "rollout": {"prompts_per_step": 3, "group_size": 4, "max_new_tokens": 8},
    "preference": {"online": true, "beta": 0.2},
    "algorithm": {"micro_batch_size": 5},
    "optim": {"lr": 0.001},
    "run": {"checkpoint_every": 2, "seed": 5}
  })");
  j["model"]["path"] = model.string();
  j["run"]["out_dir"] = out.string();
  j["run"]["steps"] = steps;
  return j;
}

TEST(PreferenceRun, OnlineDpoTrainsOnRolloutGroupsAndResumesExactly) {
  test::TempDir dir;
  const auto model = test::make_tiny_model(dir);
  auto [ma, mb] = test::straight_and_resumed(
      [&](const std::filesystem::path& out, int64_t steps) {
        return train_config_from_json(online_config(model, out, steps), "online");
      },
      dir, 4, 2, {"pref"});
  ASSERT_EQ(ma.size(), 4u);
  bool some_pair = false;
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_TRUE(ma[i].contains("loss/pref")) << ma[i].dump();
    EXPECT_FALSE(ma[i].contains("loss/policy")) << "the pref term replaces the policy term";
    EXPECT_EQ(ma[i]["reward/mean"], mb[i]["reward/mean"]) << "step " << i + 1;
    some_pair |= ma[i].value("pref/margin", 0.0) != 0.0 || ma[i].value("loss/pref", 0.0) != 0.0;
  }
  EXPECT_TRUE(some_pair) << "no group had a best and a worst episode";
}

// RAFT: the ce term on each group's best qualifying episode; the step's
// report carries the kept share, pass@G and diversity; resumes exactly.
TEST(PreferenceRun, RejectionSamplingTrainsOnTheKeptEpisodesAndResumesExactly) {
  test::TempDir dir;
  const auto model = test::make_tiny_model(dir);
  auto [ma, mb] = test::straight_and_resumed(
      [&](const std::filesystem::path& out, int64_t steps) {
        Json j = online_config(model, out, steps);
        j["preference"].erase("online");
        j["raft"] = {{"enabled", true}, {"keep", "all"}, {"min_reward", 0.5}};
        return train_config_from_json(j, "raft");
      },
      dir, 4, 2, {"ce"});
  ASSERT_EQ(ma.size(), 4u);
  double kept = 0;
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_FALSE(ma[i].contains("loss/policy")) << "the ce term replaces the policy term";
    for (const char* k : {"raft/kept_frac", "raft/groups_kept_frac", "diag/pass_at_group", "diag/distinct_frac",
                          "diag/reward_length_corr"})
      EXPECT_TRUE(ma[i].contains(k)) << k << " in " << ma[i].dump();
    EXPECT_EQ(ma[i]["raft/kept"], mb[i]["raft/kept"]) << "step " << i + 1;
    // Kept = the episodes whose reward (has an "e") is 1: their share is the step's mean reward.
    EXPECT_NEAR(ma[i]["raft/kept_frac"].get<double>(), ma[i]["reward/mean"].get<double>(), 1e-9);
    if (ma[i]["raft/kept"].get<double>() > 0) {
      EXPECT_TRUE(ma[i].contains("loss/ce"));
    }
    kept += ma[i]["raft/kept"].get<double>();
  }
  EXPECT_GT(kept, 0) << "no episode was kept in 4 steps";
}

// FCP: every rollout prompt carries the condition, each episode is trained by the ce term under the
// critic's words on it (here the "simple" critic: "The answer is correct." when the accuracy reward says
// so), so the share of episodes whose feedback is the condition is the step's accuracy; resumes exactly.
TEST(PreferenceRun, FeedbackConditionalPolicyTrainsUnderEachEpisodesFeedbackAndResumesExactly) {
  test::TempDir dir;
  const auto model = test::make_tiny_model(dir);
  auto config = [&](const std::filesystem::path& out, int64_t steps) {
    Json j = online_config(model, out, steps);
    j["preference"].erase("online");
    j["data"]["prompt_template"] = "The answer is correct. {prompt}";
    j["critic"] = {{"type", "simple"}};
    j["fcp"] = {{"enabled", true}, {"condition", "The answer is correct."}};
    return j;
  };
  auto [ma, mb] = test::straight_and_resumed(
      [&](const std::filesystem::path& out, int64_t steps) { return train_config_from_json(config(out, steps), "fcp"); },
      dir, 4, 2, {"ce"});
  ASSERT_EQ(ma.size(), 4u);
  double relabelled = 0;
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_FALSE(ma[i].contains("loss/policy")) << "the ce term replaces the policy term";
    EXPECT_TRUE(ma[i].contains("loss/ce")) << ma[i].dump();
    // 12 episodes a step, less any empty one (nothing to train, not critiqued); every right one has an "e".
    const double n = ma[i]["fcp/episodes"].get<double>(), positive = n * ma[i]["fcp/positive_frac"].get<double>();
    EXPECT_GE(n, 10.0);
    EXPECT_LE(n, 12.0);
    EXPECT_EQ(ma[i]["fcp/critic_failures"].get<double>(), 0.0);
    EXPECT_NEAR(positive, 12.0 * ma[i]["accuracy"].get<double>(), 1e-9);
    EXPECT_EQ(ma[i]["fcp/positive_frac"], mb[i]["fcp/positive_frac"]) << "step " << i + 1;
    relabelled += n - positive;
  }
  EXPECT_GT(relabelled, 0) << "every episode was right: nothing was relabelled";

  test::expect_config_error(
      [&] {
        Json j = config(dir / "bad", 2);
        j["raft"] = {{"enabled", true}};
        return j;
      }(),
      "fcp.enabled trains the ce term instead of the policy gradient, and raft.enabled replaces or feeds that term "
      "too; keep one");
  Json plain = config(dir / "plain", 1);
  plain["data"].erase("prompt_template");
  TrainRunOptions quiet;
  quiet.quiet = true;
  EXPECT_NE(test::error_of([&] { run_training(train_config_from_json(plain, "fcp"), quiet); })
                .find("fcp.condition \"The answer is correct.\" is not in the rollout prompt of"),
            std::string::npos);
}

// algorithm.gold_reward: logged as diag/gold_reward; it must exist and be held out (weight 0).
TEST(PreferenceRun, AGoldRewardIsLoggedAndMustBeHeldOut) {
  test::TempDir dir;
  const auto model = test::make_tiny_model(dir);
  Json j = online_config(model, dir / "gold", 2);
  j["preference"].erase("online");
  j["reward"].push_back({{"type", "format"}, {"name", "gold"}, {"pattern", "a"}, {"match", "search"}, {"weight", 0.0}});
  j["algorithm"]["gold_reward"] = "gold";
  TrainRunOptions quiet;
  quiet.quiet = true;
  TrainRunSummary s = run_training(train_config_from_json(j, "gold"), quiet);
  EXPECT_EQ(s.last_metrics["diag/gold_reward"], s.last_metrics["reward/gold/mean"]);
  j["reward"][1]["weight"] = 0.5;
  j["run"]["out_dir"] = (dir / "gold2").string();
  EXPECT_NE(test::error_of([&] { run_training(train_config_from_json(j, "gold"), quiet); }).find("set its weight = 0"),
            std::string::npos);
  j["algorithm"]["gold_reward"] = "silver";
  EXPECT_NE(test::error_of([&] { run_training(train_config_from_json(j, "gold"), quiet); }).find("names no [[reward]]"),
            std::string::npos);
}

TEST(PreferenceRun, ConfigErrorsNameTheKey) {
  const Json ok = dpo_config("/m", "/p.jsonl", "/o", 2);
  EXPECT_NO_THROW(train_config_from_json(ok, "cfg.toml"));
  Json bad = ok;
  bad["preference"].erase("data");
  test::expect_config_error(bad, "trainer.kind = \"dpo\" needs [preference.data]");
  bad = ok;
  bad["trainer"]["kind"] = "grpo";
  test::expect_config_error(bad, "[preference.data] is the data of trainer.kind = \"dpo\"");
  bad = ok;
  bad["algorithm"]["kl_beta"] = 0.1;
  test::expect_config_error(bad, "preference.beta");
  bad = ok;
  bad["preference"]["loss"] = "dpo";
  test::expect_config_error(bad, "preference.loss");
  bad = ok;
  bad["preference"]["label_smoothing"] = 0.1;
  bad["preference"]["loss"] = "ipo";
  test::expect_config_error(bad, "preference.label_smoothing applies to the sigmoid and simpo losses only");
  bad = ok;
  bad["algorithm"]["micro_batch_size"] = 1;
  test::expect_config_error(bad, "algorithm.micro_batch_size must be >= 2");
  bad = ok;
  bad["preference"]["data"]["chosen_fild"] = "x";
  test::expect_config_error(bad, "unknown key 'chosen_fild'");
  bad = online_config("/m", "/o", 2);
  bad["trainer"]["kind"] = "sft";
  test::expect_config_error(bad, "preference.online trains on rollout groups");
  bad = online_config("/m", "/o", 2);
  bad["raft"] = {{"enabled", true}};
  test::expect_config_error(bad, "raft.enabled and preference.online both replace");
  bad["preference"].erase("online");
  bad["raft"]["keep"] = "most";
  test::expect_config_error(bad, "raft.keep");
}

}  // namespace
}  // namespace rlf

// The recipes from the research as whole runs on a tiny random model (the
// synthetic arithmetic task): every policy objective (cispo, dppo_tv,
// dppo_kl, clip_cov, kl_cov, nft) and SEED-GRPO train and log their
// diagnostics; the rollout correction recomputes the old log-probs (equal to
// the rollout's in one fp32 process, different in bf16, where TIS weights
// move away from 1); runs with Clip-Cov's seeded choice, the correction,
// SEED-GRPO and NFT resume bit for bit; incompatible options are refused.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "tests/support/test_env.h"
#include "tests/train/run_fixtures.h"
#include "train/metrics.h"
#include "train/train_run.h"

namespace rlf {
namespace {

using test::grpo_run_config;
using test::make_tiny_model;
using test::straight_and_resumed;

double metric(const Json& m, const std::string& key) {
  EXPECT_TRUE(m.contains(key)) << key << " missing from " << m.dump();
  return m.contains(key) ? m[key].get<double>() : std::nan("");
}

TEST(RecipesRun, EveryObjectiveTrainsAndLogsItsDiagnostics) {
  test::TempDir dir;
  const auto model = make_tiny_model(dir);
  const std::pair<const char*, const char*> cases[] = {
      {"cispo", "policy/clip_frac_high"}, {"dppo_tv", "policy/region_frac"}, {"dppo_kl", "policy/region_frac"},
      {"clip_cov", "policy/cov_frac"},    {"kl_cov", "policy/cov_frac"},     {"nft", "nft/ratio_mean"}};
  for (const auto& [objective, diag] : cases) {
    SCOPED_TRACE(objective);
    Json j = grpo_run_config(model, dir / objective, 2);
    j["algorithm"]["policy_loss"] = objective;
    j["rollout"]["group_size"] = 8;  // groups with both right and wrong answers more often (nft needs them)
    j["rollout"]["temperature"] = 1.5;
    j["algorithm"]["accuracy_reward"] = "has_e";  // the random model writes an "e" now and then: mixed groups
    auto s = run_training(train_config_from_json(j, objective), test::quiet_run());
    EXPECT_EQ(s.steps, 2);
    const auto m = read_jsonl(dir / objective / "metrics.jsonl");
    ASSERT_EQ(m.size(), 2u);
    // The objective's term trained (finite, non-zero) and moved the weights.
    test::expect_terms_trained(m, {std::string(objective) == "nft" ? "nft" : "policy"});
    const auto trained = test::weights_in(dir / objective / "checkpoints/step-2/model");
    EXPECT_GT(test::relative_change(test::weights_in(model), trained, "model"), test::kMinRelativeChange);
    bool any_diag = false;
    for (const auto& step : m) any_diag |= step.contains(diag);
    EXPECT_TRUE(any_diag) << diag;
  }
}

TEST(RecipesRun, SeedGrpoScalesAdvantagesByTheGroupsSemanticEntropy) {
  test::TempDir dir;
  const auto model = make_tiny_model(dir);
  Json j = grpo_run_config(model, dir / "seed", 2);
  j["algorithm"]["seed_alpha"] = 0.5;
  run_training(train_config_from_json(j, "seed"), test::quiet_run());
  double max_se = 0;
  for (const auto& step : read_jsonl(dir / "seed/metrics.jsonl")) {
    const double se = metric(step, "seed/semantic_entropy"), scale = metric(step, "seed/scale");
    EXPECT_LE(se, std::log(4.0) + 1e-9);  // group size 4
    EXPECT_NEAR(scale, 1 - 0.5 * se / std::log(4.0), 1e-9) << "the mean scale of groups of one size is linear in SE";
    max_se = std::max(max_se, se);
  }
  // Some group's answers differed, so some advantages were scaled down (scale < 1).
  EXPECT_GT(max_se, 0.0) << "every group answered alike: the scaling was never exercised";
}

// One fp32 process: the rollout engine and the trainer run the same forward
// code on the same weights, so the recomputed old log-probs equal the
// rollout's up to float rounding and every TIS weight is ~1.
TEST(RecipesRun, RecomputedOldLogprobsAgreeWithTheRolloutInOneFp32Process) {
  test::TempDir dir;
  const auto model = make_tiny_model(dir);
  Json j = grpo_run_config(model, dir / "tis", 2);
  j["algorithm"]["recompute_old_logprobs"] = true;
  j["algorithm"]["tis_cap"] = 2.0;
  j["algorithm"]["mismatch_mask_low"] = 0.5;
  j["algorithm"]["mismatch_mask_high"] = 2.0;
  run_training(train_config_from_json(j, "tis"), test::quiet_run());
  for (const auto& step : read_jsonl(dir / "tis/metrics.jsonl")) {
    EXPECT_LT(metric(step, "mismatch/logprob_diff_max"), 1e-4);
    EXPECT_NEAR(metric(step, "mismatch/tis_weight_mean"), 1.0, 1e-4);
    EXPECT_EQ(metric(step, "mismatch/masked_frac"), 0.0);
    EXPECT_LT(metric(step, "mismatch/kl"), 1e-8);
  }
}

// bf16 weights too: the rollout's log-probs come from the same forward code
// as the trainer's (the KV-cache decode against whole sequences), and they
// agree; TIS and masking act when they do not (tests/train/test_trainer.cpp
// drives them with rollout log-probs that differ).
TEST(RecipesRun, Bf16RolloutsAgreeWithTheTrainer) {
  test::TempDir dir;
  const auto model = make_tiny_model(dir);
  Json j = grpo_run_config(model, dir / "bf16", 1);
  j["model"]["dtype"] = "bf16";
  j["algorithm"]["recompute_old_logprobs"] = true;
  j["algorithm"]["tis_cap"] = 2.0;
  run_training(train_config_from_json(j, "bf16"), test::quiet_run());
  const auto m = read_jsonl(dir / "bf16/metrics.jsonl");
  ASSERT_EQ(m.size(), 1u);
  // Within a few bf16 roundings of a logit (bf16 keeps 8 significant bits: 2^-8 = 0.004 relative): the decode
  // and the whole-sequence forward multiply other shapes, which the CPU's kernels block and round differently
  // (under 1e-3 on the Sapphire Rapids Xeon, 2e-3 on an AMD EPYC with AVX2 only, whose bf16 products rlf
  // sums in fp32, model/cpu_bf16_linear.h).
  EXPECT_LT(metric(m[0], "mismatch/logprob_diff_max"), 1e-2);
  EXPECT_NEAR(metric(m[0], "mismatch/tis_weight_mean"), 1.0, 5e-3);
}

TEST(RecipesRun, ClipCovWithTheCorrectionAndSeedResumesExactly) {
  test::TempDir dir;
  const auto model = make_tiny_model(dir);
  auto config = [&](const std::filesystem::path& out, int64_t steps) {
    Json j = grpo_run_config(model, out, steps);
    j["algorithm"]["policy_loss"] = "clip_cov";
    j["algorithm"]["clip_cov_fraction"] = 0.05;
    j["algorithm"]["clip_cov_low"] = 0.0;
    j["algorithm"]["recompute_old_logprobs"] = true;
    j["algorithm"]["tis_cap"] = 2.0;
    j["algorithm"]["seed_alpha"] = 0.5;
    return train_config_from_json(j, "clip_cov");
  };
  auto [a, b] = straight_and_resumed(config, dir, 4, 2, {"policy"});
  ASSERT_EQ(a.size(), 4u);
  ASSERT_EQ(b.size(), 4u);
  for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i]["loss/policy"], b[i]["loss/policy"]) << "step " << i + 1;
}

TEST(RecipesRun, NftResumesExactly) {
  test::TempDir dir;
  const auto model = make_tiny_model(dir);
  auto config = [&](const std::filesystem::path& out, int64_t steps) {
    Json j = grpo_run_config(model, out, steps);
    j["algorithm"]["policy_loss"] = "nft";
    j["algorithm"]["accuracy_reward"] = "has_e";
    j["rollout"]["temperature"] = 1.5;
    return train_config_from_json(j, "nft");
  };
  auto [a, b] = straight_and_resumed(config, dir, 4, 2, {"nft"});
  ASSERT_EQ(a.size(), 4u);
  ASSERT_EQ(b.size(), 4u);
  for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i]["loss/nft"], b[i]["loss/nft"]) << "step " << i + 1;
}

TEST(RecipesRun, IncompatibleRecipeOptionsAreRefused) {
  const Json ok = grpo_run_config("/m", "/o", 2);
  Json bad = ok;
  bad["algorithm"]["tis_cap"] = 2.0;
  test::expect_config_error(bad, "set algorithm.recompute_old_logprobs = true");
  bad = ok;
  bad["algorithm"]["policy_loss"] = "dppo_tv";
  bad["algorithm"]["ratio_level"] = "sequence";
  test::expect_config_error(bad, "set algorithm.ratio_level = \"token\"");
  bad = ok;
  bad["algorithm"]["policy_loss"] = "nft";
  bad["raft"]["enabled"] = true;
  test::expect_config_error(bad, "choose one");
  bad = ok;
  bad["algorithm"]["policy_loss"] = "ppo";
  test::expect_config_error(bad, "algorithm.policy_loss");
  bad = ok;
  bad["algorithm"]["seed_alpha"] = 2.0;
  test::expect_config_error(bad, "algorithm.seed_alpha");
}

}  // namespace
}  // namespace rlf

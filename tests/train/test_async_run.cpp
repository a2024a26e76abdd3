// Asynchronous rollouts (rollout.max_staleness, train/rollout_pipeline.h) on
// a tiny random model: batches are sampled ahead with weights at most K
// steps old, following the logical clock (staleness 0 at the first step and
// after every checkpoint boundary, then up to K); the run does not depend on
// the threads' timing (two runs are bit for bit the same); N steps straight
// equal N/2 + resume + N/2; unsupported combinations are refused.
#include <gtest/gtest.h>

#include <vector>

#include "tests/support/test_env.h"
#include "tests/train/run_fixtures.h"
#include "train/metrics.h"
#include "train/train_run.h"

namespace rlf {
namespace {

using test::expect_same_parameters;
using test::grpo_run_config;
using test::make_tiny_model;
using test::straight_and_resumed;

std::vector<double> staleness_of(const std::vector<Json>& metrics) {
  std::vector<double> out;
  for (const auto& m : metrics) out.push_back(m.value("rollout/staleness", -1.0));
  return out;
}

TEST(AsyncRun, StalenessFollowsTheLogicalClock) {
  test::TempDir dir;
  const auto model = make_tiny_model(dir);
  Json j = grpo_run_config(model, dir / "k2", 5);
  j["rollout"]["max_staleness"] = 2;
  j["run"]["checkpoint_every"] = 0;
  auto s = run_training(train_config_from_json(j, "k2"), test::quiet_run());
  EXPECT_EQ(s.steps, 5);
  EXPECT_EQ(staleness_of(read_jsonl(dir / "k2/metrics.jsonl")), (std::vector<double>{0, 1, 2, 2, 2}));
  // Checkpoints every 2 steps are drain points: nothing sampled before one is trained after it.
  j = grpo_run_config(model, dir / "k1", 5);
  j["rollout"]["max_staleness"] = 1;
  run_training(train_config_from_json(j, "k1"), test::quiet_run());
  EXPECT_EQ(staleness_of(read_jsonl(dir / "k1/metrics.jsonl")), (std::vector<double>{0, 1, 0, 1, 0}));
}

TEST(AsyncRun, TwoRunsAreTheSameAndResumeIsExact) {
  test::TempDir dir;
  const auto model = make_tiny_model(dir);
  auto config = [&](const std::filesystem::path& out, int64_t steps) {
    Json j = grpo_run_config(model, out, steps);
    j["rollout"]["max_staleness"] = 1;
    j["algorithm"]["off_policy_ratio_cap"] = 2.0;  // the stale tokens' safeguard
    return train_config_from_json(j, "async");
  };
  auto [a, b] = straight_and_resumed(config, dir, 4, 2, {"policy"});
  ASSERT_EQ(a.size(), 4u);
  ASSERT_EQ(b.size(), 4u);
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i]["reward/mean"], b[i]["reward/mean"]) << "step " << i + 1;
    EXPECT_EQ(a[i]["loss/policy"], b[i]["loss/policy"]) << "step " << i + 1;
  }
  // A third run, straight again: the same weights whatever the threads did.
  run_training(config(dir / "c", 4), test::quiet_run());
  expect_same_parameters(dir / "a/checkpoints/step-4/model", dir / "c/checkpoints/step-4/model");
  // And not the synchronous run: the second step trained on stale samples.
  Json sync = grpo_run_config(model, dir / "s", 4);
  run_training(train_config_from_json(sync, "sync"), test::quiet_run());
  expect_same_parameters(dir / "a/checkpoints/step-4/model", dir / "s/checkpoints/step-4/model", /*same=*/false);
  EXPECT_EQ(read_jsonl(dir / "s/metrics.jsonl")[0]["reward/mean"], a[0]["reward/mean"]) << "step 1 is the same";
}

TEST(AsyncRun, UnsupportedCombinationsAreRefused) {
  Json bad = grpo_run_config("/m", "/o", 2);
  bad["rollout"]["max_staleness"] = 1;
  bad["refine"]["enabled"] = true;
  test::expect_config_error(bad, "rollout.max_staleness = 1 (asynchronous rollouts) is not supported here: refine.enabled");
  bad = grpo_run_config("/m", "/o", 2);
  bad["rollout"]["max_staleness"] = 100;
  test::expect_config_error(bad, "rollout.max_staleness");
}

}  // namespace
}  // namespace rlf

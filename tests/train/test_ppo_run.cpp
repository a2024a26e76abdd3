// Whole PPO runs (algorithm.credit = "gae" with a critic, [value]) on a tiny
// random model: the critic is trained beside the policy, its values are the
// GAE baseline, the adaptive KL coefficient moves, a run resumes bit for bit
// (policy, critic, both optimisers, the KL coefficient), and config errors
// name the key.
#include <gtest/gtest.h>

#include <algorithm>

#include "model/loader.h"
#include "model/safetensors.h"
#include "rm/reward_model.h"
#include "tests/support/test_env.h"
#include "tests/train/run_fixtures.h"
#include "train/train_config.h"
#include "train/train_run.h"
#include "util/fs.h"

namespace rlf {
namespace {

Json ppo_config(const std::filesystem::path& model, const std::filesystem::path& out, int64_t steps) {
  Json j = Json::parse(R"({
    "data": {"preset": "arithmetic", "eval_size": 4, "arithmetic": {"n_problems": 40}},
    "reward": [{"type": "math", "answer_format": "gsm8k"}, {"type": "format", "name": "has_e", "pattern": "e", "match": "search", "weight": 0.5}],
    "rollout": {"prompts_per_step": 2, "group_size": 4, "max_new_tokens": 8},
    "algorithm": {"micro_batch_size": 3, "epochs": 2, "credit": "gae", "lambda": 0.9, "whiten_advantages": true,
                  "kl_beta": 0.05, "kl_placement": "reward", "kl_target": 0.01, "kl_horizon": 20},
    "value": {"lr": 0.003, "clip": 0.2},
    "optim": {"lr": 0.001},
    "run": {"checkpoint_every": 2, "samples_every": 1, "seed": 7}
  })");
  j["model"]["path"] = model.string();
  j["run"]["out_dir"] = out.string();
  j["run"]["steps"] = steps;
  return j;
}

TEST(PpoRun, TrainsTheCriticBesideThePolicyAndResumesExactly) {
  test::TempDir dir;
  const auto model = test::make_tiny_model(dir);
  auto [ma, mb] = test::straight_and_resumed(
      [&](const std::filesystem::path& out, int64_t steps) {
        return train_config_from_json(ppo_config(model, out, steps), "ppo");
      },
      dir, 4, 2, {"policy", "value"});
  ASSERT_EQ(ma.size(), 4u);
  ASSERT_EQ(mb.size(), 4u);
  for (size_t i = 0; i < 4; ++i) {
    SCOPED_TRACE(i + 1);
    for (const char* k : {"loss/value", "value/mean", "value/return_mean", "value/error", "value/clipfrac",
                          "value/grad_norm", "kl/beta", "kl/episode_mean", "loss/policy"}) {
      ASSERT_TRUE(ma[i].contains(k)) << k;
      EXPECT_EQ(ma[i][k], mb[i][k]) << k;
    }
    EXPECT_LT(ma[i]["policy/logprob_diff_max"].get<double>(), 1e-4);
  }
  // The critic learns: it starts at 0 (a zero head) and moves towards the returns.
  ASSERT_TRUE(ma[0].contains("value/explained_variance"));
  EXPECT_NEAR(ma[0]["value/explained_variance"].get<double>(), 0.0, 1e-6) << "a zero head: V_old = 0 explains nothing";
  EXPECT_NE(ma[3]["value/mean"], ma[0]["value/mean"]);
  // The adaptive coefficient moved away from algorithm.kl_beta, the same way in both runs.
  EXPECT_EQ(ma[0]["kl/beta"].get<double>(), 0.05);
  EXPECT_NE(ma[3]["kl/beta"].get<double>(), 0.05);
  // The critic is saved beside the policy, a classifier, identical in both runs.
  const std::filesystem::path ca = dir / "a/checkpoints/step-4/value/model", cb = dir / "b/checkpoints/step-4/value/model";
  LoadedModel va = load_reward_model(ca, {}), vb = load_reward_model(cb, {});
  auto pb = vb.model->named_parameters();
  for (const auto& p : va.model->named_parameters()) EXPECT_TRUE(torch::equal(p.value(), pb[p.key()])) << p.key();
  EXPECT_NE(va.model->score->weight.abs().sum().item<double>(), 0.0) << "the zero head was trained";
}

// value.shared: the value head sits on the policy's trunk; the value term is
// a term of the policy's trainer (its gradient reaches the trunk), the head
// travels in the policy's checkpoint, and a loader without a value head
// reads the policy as a plain causal LM.
TEST(PpoRun, AValueHeadOnThePolicysTrunkTrainsWithThePolicyAndResumesExactly) {
  test::TempDir dir;
  const auto model = test::make_tiny_model(dir);
  auto config = [&](const std::filesystem::path& out, int64_t steps) {
    Json j = ppo_config(model, out, steps);
    j["value"] = {{"shared", true}, {"coef", 0.5}, {"clip", 0.2}};
    return train_config_from_json(j, "shared");
  };
  auto [ma, mb] = test::straight_and_resumed(config, dir, 4, 2, {"policy", "value"});
  ASSERT_EQ(ma.size(), 4u);
  for (size_t i = 0; i < 4; ++i) {
    SCOPED_TRACE(i + 1);
    for (const char* k : {"loss/value", "value/mean", "value/clipfrac", "loss/policy", "optim/grad_norm"}) {
      ASSERT_TRUE(ma[i].contains(k)) << k;
      EXPECT_EQ(ma[i][k], mb[i][k]) << k;
    }
    EXPECT_FALSE(ma[i].contains("value/lr")) << "no second optimiser";
  }
  EXPECT_NEAR(ma[0]["value/explained_variance"].get<double>(), 0.0, 1e-6) << "a zero head explains nothing";
  EXPECT_NE(ma[3]["value/mean"], ma[0]["value/mean"]);
  // No companion critic; the head is in the policy's own weights, equal in both runs and trained.
  EXPECT_FALSE(std::filesystem::exists(dir / "a/checkpoints/step-4/value"));
  SafetensorsFile fa(dir / "a/checkpoints/step-4/model/model.safetensors"),
      fb(dir / "b/checkpoints/step-4/model/model.safetensors");
  const auto ha = tensor_from_view(fa.view("v_head.weight")), hb = tensor_from_view(fb.view("v_head.weight"));
  EXPECT_TRUE(torch::equal(ha, hb));
  EXPECT_GT(ha.abs().sum().item<double>(), 0.0) << "the zero head was trained";
  // A loader without a value head reads the policy (and generates) as before.
  LoadedModel lm = load_model(dir / "a/checkpoints/step-4/model");
  EXPECT_FALSE(lm.model->has_value_head());
  EXPECT_EQ(lm.model->forward(torch::tensor({{1, 5, 9}}, torch::kInt64)).size(2), 512);
  // The trunk gets the value loss's gradient: with a larger coef the policy's weights end elsewhere.
  auto coef = [&](const std::filesystem::path& out) {
    Json j = ppo_config(model, out, 2);
    j["value"] = {{"shared", true}, {"coef", 5.0}};
    return train_config_from_json(j, "coef");
  };
  TrainRunOptions quiet;
  quiet.quiet = true;
  run_training(coef(dir / "c"), quiet);
  test::expect_same_parameters(dir / "c/checkpoints/step-2/model", dir / "b/checkpoints/step-2/model", false);
}

// Multi-turn: a guessing game (observations between turns, per-turn
// rewards). GAE runs over the policy tokens of every turn (or over turns,
// algorithm.value_level = "turn"); the critic's targets exist on policy
// tokens only; the run resumes bit for bit.
class PpoMultiTurn : public ::testing::TestWithParam<const char*> {};

TEST_P(PpoMultiTurn, EpisodesResumeExactly) {
  test::TempDir dir;
  const auto model = test::make_tiny_model(dir);
  auto config = [&](const std::filesystem::path& out, int64_t steps) {
    Json j = Json::parse(R"({
      "data": {"preset": "guess", "eval_size": 4, "guess": {"n_problems": 30, "max_number": 8}},
      "env": {"type": "guess", "max_turns": 3, "turn_penalty": 0.1},
      "rollout": {"prompts_per_step": 2, "group_size": 3, "max_new_tokens": 4},
      "algorithm": {"micro_batch_size": 4, "credit": "gae", "gamma": 0.95, "lambda": 0.9, "mini_batches": 2,
                    "whiten_advantages": true},
      "value": {"lr": 0.003},
      "optim": {"lr": 0.001},
      "run": {"checkpoint_every": 2, "seed": 3}
    })");
    j["algorithm"]["value_level"] = GetParam();
    j["model"]["path"] = model.string();
    j["run"]["out_dir"] = out.string();
    j["run"]["steps"] = steps;
    return train_config_from_json(j, "ppo-guess");
  };
  auto [ma, mb] = test::straight_and_resumed(config, dir, 4, 2, {"policy", "value"});
  ASSERT_EQ(ma.size(), 4u);
  EXPECT_GT(ma.back()["episode/turns_mean"].get<double>(), 1.0) << "the game takes more than one turn";
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(ma[i]["loss/value"], mb[i]["loss/value"]) << "step " << i + 1;
    EXPECT_EQ(ma[i]["reward/mean"], mb[i]["reward/mean"]) << "step " << i + 1;
    EXPECT_TRUE(ma[i]["value/error"].is_number()) << "step " << i + 1;
  }
}

// Token-level values, and one value per turn (at the turn's first token).
INSTANTIATE_TEST_SUITE_P(ValueLevels, PpoMultiTurn, ::testing::Values("token", "turn"));

// value.model: the critic starts from a classifier directory (a reward
// model, as InstructGPT does) instead of the policy with a zero head; one
// with another vocabulary is refused, naming the key.
TEST(PpoRun, TheCriticCanStartFromARewardModelDirectory) {
  test::TempDir dir;
  const auto model = test::make_tiny_model(dir);
  LoadedModel base = load_model(model);
  SaveOptions so;
  so.tokenizer_source = model;
  save_model(*make_reward_model(*base.model, 1, 5), dir / "rm", so);
  Json j = ppo_config(model, dir / "from_rm", 1);
  j["value"]["model"] = (dir / "rm").string();
  TrainRunOptions quiet;
  quiet.quiet = true;
  run_training(train_config_from_json(j, "ppo"), quiet);
  auto m = read_jsonl(dir / "from_rm/metrics.jsonl");
  ASSERT_EQ(m.size(), 1u);
  EXPECT_NE(m[0]["value/explained_variance"].get<double>(), 0.0) << "a random head is not a zero head";
  ModelConfig c = base.model->config();
  c.vocab_size += 8;
  save_model(*make_reward_model(*make_random_model(c, 2, torch::kFloat32, torch::kCPU), 1, 5), dir / "rm2", so);
  j["value"]["model"] = (dir / "rm2").string();
  j["run"]["out_dir"] = (dir / "from_rm2").string();
  const std::string e = test::error_of([&] { run_training(train_config_from_json(j, "ppo"), quiet); });
  EXPECT_NE(e.find("needs the same tokenizer"), std::string::npos) << e;
}

TEST(PpoRun, AFixedCoefficientAndUnwhitenedAdvantagesAlsoTrain) {
  test::TempDir dir;
  const auto model = test::make_tiny_model(dir);
  Json j = ppo_config(model, dir / "fixed", 2);
  j["algorithm"]["kl_target"] = 0.0;
  j["algorithm"]["whiten_advantages"] = false;
  j["value"]["clip"] = 0.0;
  TrainRunOptions quiet;
  quiet.quiet = true;
  run_training(train_config_from_json(j, "ppo"), quiet);
  auto m = read_jsonl(dir / "fixed/metrics.jsonl");
  ASSERT_EQ(m.size(), 2u);
  EXPECT_EQ(m[1]["kl/beta"].get<double>(), 0.05);
  EXPECT_EQ(m[1]["value/clipfrac"].get<double>(), 0.0) << "value.clip = 0: never clipped";
}

// Reward combinators and the self-certainty reward in a run: a cost kept
// under a threshold by a Lagrange multiplier (logged, moved by dual ascent,
// restored on resume), a gated and clipped component, and the policy's own
// self-certainty as a weighted component.
TEST(RewardCombinatorsRun, TheMultiplierMovesAndResumesExactly) {
  test::TempDir dir;
  const auto model = test::make_tiny_model(dir);
  auto config = [&](const std::filesystem::path& out, int64_t steps) {
    Json j = ppo_config(model, out, steps);
    j.erase("value");
    j["algorithm"] = {{"micro_batch_size", 3}};
    j["reward"] = Json::parse(R"([
      {"type": "math", "name": "correct", "answer_format": "gsm8k"},
      {"type": "format", "name": "has_e", "pattern": "e", "match": "search", "constraint_max": 0.05,
       "lambda_init": 0.2, "lambda_lr": 2.0},
      {"type": "format", "name": "short", "pattern": "^.{0,4}$", "gate": "correct", "clip": [0, 0.5]},
      {"type": "self_certainty", "weight": 0.1}
    ])");
    return train_config_from_json(j, "combine");
  };
  auto [ma, mb] = test::straight_and_resumed(config, dir, 4, 2, {"policy"});
  ASSERT_EQ(ma.size(), 4u);
  for (size_t i = 0; i < 4; ++i) {
    SCOPED_TRACE(i + 1);
    for (const char* k : {"reward/has_e/lambda", "reward/self_certainty/mean", "reward/short/mean", "reward/mean"}) {
      ASSERT_TRUE(ma[i].contains(k)) << k;
      EXPECT_EQ(ma[i][k], mb[i][k]) << k;
    }
    EXPECT_GT(ma[i]["reward/self_certainty/mean"].get<double>(), 0.0);
  }
  EXPECT_EQ(ma[0]["reward/has_e/lambda"].get<double>(), 0.2);
  // Dual ascent: lambda_{k+1} = max(0, lambda_k + 2 (mean has_e_k - 0.05)).
  for (size_t i = 0; i + 1 < 4; ++i)
    EXPECT_NEAR(ma[i + 1]["reward/has_e/lambda"].get<double>(),
                std::max(0.0, ma[i]["reward/has_e/lambda"].get<double>() +
                                  2.0 * (ma[i]["reward/has_e/mean"].get<double>() - 0.05)),
                1e-12);
}

TEST(PpoRun, ASharedValueHeadConfigErrorsNameTheKey) {
  Json j = ppo_config("/m", "/o", 2);
  j["value"] = {{"shared", true}, {"model", "/rm"}};
  EXPECT_NE(test::error_of([&] { train_config_from_json(j, "cfg.toml"); }).find("drop one of them"), std::string::npos);
  j["value"] = {{"shared", true}, {"coef", 0}};
  EXPECT_NE(test::error_of([&] { train_config_from_json(j, "cfg.toml"); }).find("value.coef"), std::string::npos);
}

TEST(PpoRun, ConfigErrorsNameTheKey) {
  const Json ok = ppo_config("/m", "/o", 2);
  EXPECT_NO_THROW(train_config_from_json(ok, "cfg.toml"));
  Json bad = ok;
  bad["algorithm"]["credit"] = "episode";
  test::expect_config_error(bad, "[value] configures PPO's critic, used by algorithm.credit = \"gae\" (got \"episode\")");
  bad = ok;
  bad["algorithm"]["kl_placement"] = "loss";
  test::expect_config_error(bad, "algorithm.kl_target adapts the KL-in-reward coefficient");
  bad = ok;
  bad["algorithm"]["kl_beta"] = 0.0;
  test::expect_config_error(bad, "algorithm.kl_target adapts algorithm.kl_beta, which is 0");
  bad = ok;
  bad["algorithm"]["lambda"] = 1.5;
  test::expect_config_error(bad, "algorithm.lambda");
  bad = ok;
  bad["value"]["lr"] = 0.0;
  test::expect_config_error(bad, "value.lr");
  bad = ok;
  bad["value"]["clip"] = -1.0;
  test::expect_config_error(bad, "value.clip");
  bad = ok;
  bad["raft"] = {{"enabled", true}};
  test::expect_config_error(bad, "algorithm.credit = \"gae\" gives the policy-gradient term its advantages, but raft.enabled");
  bad = ok;
  bad["algorithm"]["credit"] = "turn";
  bad.erase("value");
  bad["algorithm"]["value_level"] = "turn";
  test::expect_config_error(bad, "algorithm.value_level = \"turn\" places the critic's values for GAE");
  bad = ok;
  bad["value"]["modle"] = "x";
  test::expect_config_error(bad, "modle");
}

}  // namespace
}  // namespace rlf

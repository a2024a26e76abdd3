// Whole reward-model runs (trainer.kind = "rm") on a tiny random model: the
// Bradley-Terry term learns a preference that holds on held-out pairs, the
// saved model is a classifier whose scores the reward "reward_model" uses,
// a frozen backbone trains only the head, a run resumes exactly, and config
// errors name the key.
#include <gtest/gtest.h>

#include "model/hf_dir.h"
#include "rm/model_reward.h"
#include "rm/reward_model.h"
#include "tests/support/test_env.h"
#include "tests/train/run_fixtures.h"
#include "train/train_config.h"
#include "train/train_run.h"
#include "util/fs.h"

namespace rlf {
namespace {

Json rm_config(const std::filesystem::path& model, const std::filesystem::path& pairs, const std::filesystem::path& out,
               int64_t steps) {
  Json j = Json::parse(R"({
    "trainer": {"kind": "rm"},
    "preference": {"batch_size": 8, "data": {"shuffle": true, "eval_size": 16}},
    "algorithm": {"micro_batch_size": 6},
    "optim": {"lr": 0.003},
    "run": {"checkpoint_every": 2, "seed": 3}
  })");
  j["model"]["path"] = model.string();
  j["preference"]["data"]["path"] = pairs.string();
  j["run"]["out_dir"] = out.string();
  j["run"]["steps"] = steps;
  return j;
}

TEST(RewardModelRun, LearnsAPreferenceThatHoldsOnHeldOutPairsAndServesAsAReward) {
  test::TempDir dir;
  const auto model = test::make_tiny_model(dir);
  const auto pairs = test::write_cat_pairs(dir, 96);
  TrainRunOptions quiet;
  quiet.quiet = true;
  TrainRunSummary s = run_training(train_config_from_json(rm_config(model, pairs, dir / "rm", 30), "rm"), quiet);
  EXPECT_EQ(s.kind, "rm");
  ASSERT_TRUE(s.preference_before.is_object());
  ASSERT_TRUE(s.preference_after.is_object());
  EXPECT_EQ(s.preference_after["pairs"], 16);
  EXPECT_GE(s.preference_after["accuracy"].get<double>(), 0.9) << s.preference_after.dump();
  EXPECT_GT(s.preference_after["margin"].get<double>(), s.preference_before["margin"].get<double>());
  EXPECT_LT(s.preference_after["loss"].get<double>(), s.preference_before["loss"].get<double>());
  auto m = read_jsonl(dir / "rm/metrics.jsonl");
  ASSERT_EQ(m.size(), 30u);
  EXPECT_LT(m.back()["loss/rm"].get<double>(), m.front()["loss/rm"].get<double>());
  EXPECT_TRUE(m.back().contains("rm/accuracy"));
  EXPECT_FALSE(m.back().contains("kl/ref")) << "a reward model has no token log-probs";
  EXPECT_FALSE(m.back().contains("policy/entropy"));
  // The saved model is a classifier, and the reward scores chosen over rejected.
  ASSERT_EQ(s.final_model, dir / "rm/checkpoints/step-30/model");
  EXPECT_EQ(HfModelDir(s.final_model).config().architecture, "LlamaForSequenceClassification");
  RewardSet set = make_reward_set(Json::array({{{"type", "reward_model"}, {"model", s.final_model.string()}}}), "cfg",
                                  model_reward_factories());
  RewardGroup g;
  g.prompt = "Tim went to the beach.";
  for (const char* c : {" The cat sang and was happy.", " The cat sang and was sad."}) {
    RewardSample x;
    x.completion = c;
    g.samples.push_back(x);
  }
  const auto r = set.components().at(0).reward->score(g);
  EXPECT_GT(*r[0].score, *r[1].score);
}

TEST(RewardModelRun, AFrozenBackboneTrainsOnlyTheHead) {
  test::TempDir dir;
  const auto model = test::make_tiny_model(dir);
  const auto pairs = test::write_cat_pairs(dir, 48);
  Json j = rm_config(model, pairs, dir / "probe", 10);
  j["reward_model"]["train_backbone"] = false;
  j["optim"]["lr"] = 0.03;
  TrainRunOptions quiet;
  quiet.quiet = true;
  TrainRunSummary s = run_training(train_config_from_json(j, "probe"), quiet);
  LoadedModel lm = load_model(model), rm = load_reward_model(s.final_model, {});
  auto before = lm.model->named_parameters();
  for (const auto& p : rm.model->named_parameters())
    if (p.key() != "score.weight") EXPECT_TRUE(torch::equal(p.value(), before[p.key()])) << p.key();
  auto m = read_jsonl(dir / "probe/metrics.jsonl");
  EXPECT_LT(m.back()["loss/rm"].get<double>(), m.front()["loss/rm"].get<double>());
  EXPECT_GT(s.preference_after["margin"].get<double>(), s.preference_before["margin"].get<double>());
}

TEST(RewardModelRun, ResumesExactly) {
  test::TempDir dir;
  const auto model = test::make_tiny_model(dir);
  const auto pairs = test::write_cat_pairs(dir, 40);
  auto [ma, mb] = test::straight_and_resumed(
      [&](const std::filesystem::path& out, int64_t steps) {
        return train_config_from_json(rm_config(model, pairs, out, steps), "rm");
      },
      dir, 4, 2);
  ASSERT_EQ(ma.size(), 4u);
  ASSERT_EQ(mb.size(), 4u);
  for (size_t i = 0; i < 4; ++i) EXPECT_EQ(ma[i]["loss/rm"], mb[i]["loss/rm"]) << "step " << i + 1;
}

TEST(RewardModelRun, PairsLongerThanTheContextAreBadRecords) {
  test::TempDir dir;
  const auto model = test::make_tiny_model(dir);  // a 512-token context
  const auto pairs = test::write_cat_pairs(dir, 24);
  std::string long_story;
  for (int i = 0; i < 200; ++i) long_story += " The cat ran.";
  std::string text = read_file(pairs);
  text += Json{{"prompt", "Tom went out."}, {"chosen", long_story}, {"rejected", " The cat sat."}}.dump() + "\n";
  write_file_atomic(pairs, text);
  TrainRunOptions quiet;
  quiet.quiet = true;
  Json j = rm_config(model, pairs, dir / "long", 2);
  j["preference"]["data"]["shuffle"] = false;
  j["preference"]["data"]["eval_size"] = 4;
  const std::string e = test::error_of([&] { run_training(train_config_from_json(j, "rm"), quiet); });
  EXPECT_NE(e.find("pairs.jsonl' line 25: the prompt"), std::string::npos) << e;
  EXPECT_NE(e.find("preference.data.on_bad_record = \"skip\""), std::string::npos) << e;
  j["preference"]["data"]["on_bad_record"] = "skip";
  TrainRunSummary s = run_training(train_config_from_json(j, "rm"), quiet);
  EXPECT_EQ(s.steps, 2);
  EXPECT_EQ(s.preference_after["pairs"], 3) << "the long pair was a held-out one: 4 - 1 scored";
}

TEST(RewardModelRun, ConfigErrorsNameTheKey) {
  auto expect_error = [](Json j, const std::string& needle) {
    const std::string e = test::error_of([&] { train_config_from_json(j, "cfg.toml"); });
    EXPECT_NE(e.find(needle), std::string::npos) << e;
  };
  const Json ok = rm_config("/m", "/p.jsonl", "/o", 2);
  EXPECT_NO_THROW(train_config_from_json(ok, "cfg.toml"));
  Json bad = ok;
  bad["preference"].erase("data");
  expect_error(bad, "trainer.kind = \"rm\" needs [preference.data]");
  bad = ok;
  bad["data"] = {{"preset", "arithmetic"}};
  bad["reward"] = Json::array({{{"type", "math"}}});
  expect_error(bad, "a reward model does not generate");  // without [sft], [data] has nothing to serve
  bad = ok;
  bad["algorithm"]["kl_beta"] = 0.1;
  expect_error(bad, "algorithm.kl_beta needs token log-probs");
  bad = ok;
  bad["reward_model"]["margin"] = -1;
  expect_error(bad, "reward_model.margin");
  bad = ok;
  bad["reward_model"]["margn"] = 1;
  expect_error(bad, "margn");
  bad = ok;
  bad["run"]["sft_control"] = true;
  expect_error(bad, "run.sft_control");
}

}  // namespace
}  // namespace rlf

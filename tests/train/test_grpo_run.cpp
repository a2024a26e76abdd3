// End-to-end GRPO runs on a tiny random model (synthetic arithmetic, math
// reward): the loop runs, parameters move, the trainer's log-probs equal the
// rollout's, and N steps straight equal N/2 + resume + N/2 bit for bit (fp32).
#include <gtest/gtest.h>

#include "model/loader.h"
#include "tests/support/test_env.h"
#include "train/metrics.h"
#include "train/train_run.h"

namespace rlf {
namespace {

std::filesystem::path make_tiny_model(const test::TempDir& dir) {
  ModelConfig c = ModelConfig::preset("stories260K");
  c.num_hidden_layers = 2;
  auto model = make_random_model(c, 1, torch::kFloat32, torch::kCPU);
  SaveOptions so;
  so.tokenizer_source = test::shared_path("models/stories260K/tok512.bin");
  save_model(*model, dir / "tiny", so);
  return dir / "tiny";
}

Json make(const std::filesystem::path& model, const std::filesystem::path& out, int64_t steps) {
  Json j = Json::parse(R"({
    "data": {"preset": "arithmetic", "eval_size": 4, "arithmetic": {"n_problems": 40}},
    "reward": [{"type": "math", "answer_format": "gsm8k"}, {"type": "format", "name": "has_e", "pattern": "e", "match": "search", "weight": 0.5}],
    "rollout": {"prompts_per_step": 2, "group_size": 4, "max_new_tokens": 8},
    "algorithm": {"micro_batch_size": 3, "epochs": 2},
    "optim": {"lr": 0.001},
    "run": {"checkpoint_every": 2, "samples_every": 1, "seed": 7}
  })");
  j["model"]["path"] = model.string();
  j["run"]["out_dir"] = out.string();
  j["run"]["steps"] = steps;
  return j;
}

TEST(GrpoRun, ResumeContinuesExactly) {
  test::TempDir dir;
  auto model = make_tiny_model(dir);
  TrainRunOptions quiet;
  quiet.quiet = true;

  auto straight = run_training(train_config_from_json(make(model, dir / "a", 4), "straight"), quiet);
  EXPECT_EQ(straight.steps, 4);
  run_training(train_config_from_json(make(model, dir / "b", 2), "first half"), quiet);
  TrainRunOptions resume = quiet;
  resume.resume = true;
  auto resumed = run_training(train_config_from_json(make(model, dir / "b", 4), "second half"), resume);
  EXPECT_EQ(resumed.steps, 4);

  LoadedModel a = load_model(dir / "a/checkpoints/step-4/model");
  LoadedModel b = load_model(dir / "b/checkpoints/step-4/model");
  LoadedModel init = load_model(model);
  auto pa = a.model->named_parameters(), pb = b.model->named_parameters(), p0 = init.model->named_parameters();
  bool moved = false;
  for (const auto& p : pa) {
    EXPECT_TRUE(torch::equal(p.value(), pb[p.key()])) << p.key() << " differs after resume";
    moved |= !torch::equal(p.value(), p0[p.key()]);
  }
  EXPECT_TRUE(moved) << "training did not change any parameter";

  auto ma = read_jsonl(dir / "a/metrics.jsonl"), mb = read_jsonl(dir / "b/metrics.jsonl");
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

TEST(GrpoRun, ConfigErrorsNameTheKey) {
  auto expect_error = [](Json j, const std::string& needle) {
    try {
      train_config_from_json(j, "cfg.toml");
      ADD_FAILURE() << "no error for " << needle;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  Json ok = make("/m", "/o", 2);
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
}

}  // namespace
}  // namespace rlf

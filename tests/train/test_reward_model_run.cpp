// Whole reward-model runs (trainer.kind = "rm") on a tiny random model: the
// Bradley-Terry term learns a preference that holds on held-out pairs, the
// saved model is a classifier whose scores the reward "reward_model" uses,
// a frozen backbone trains only the head, a run resumes exactly, a
// multi-objective run regresses rated attributes and fits a gating layer
// that travels with the checkpoint, and config errors name the key.
#include <gtest/gtest.h>

#include "data/step_dataset.h"
#include "model/hf_dir.h"
#include "rm/gating.h"
#include "tests/data/data_fixtures.h"
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
    if (p.key() != "score.weight") {
      EXPECT_TRUE(torch::equal(p.value(), before[p.key()])) << p.key();
    }
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
      dir, 4, 2, {"rm"});
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

// Cat pairs with ratings: "happy" decides (chosen 1, rejected 0); "long" is
// the rejected's (a distractor); every third pair does not rate "long".
std::filesystem::path write_rated_cat_pairs(const test::TempDir& dir, int n) {
  const auto plain = test::write_cat_pairs(dir, n);
  std::string text;
  int i = 0;
  for (Json r : read_jsonl(plain)) {
    r["chosen_ratings"] = {{"happy", 1.0}};
    r["rejected_ratings"] = {{"happy", 0.0}};
    if (i++ % 3 != 0) r["chosen_ratings"]["long"] = 0.0, r["rejected_ratings"]["long"] = 1.0;
    text += r.dump() + "\n";
  }
  write_file_atomic(dir / "rated.jsonl", text);
  return dir / "rated.jsonl";
}

Json multi_objective_config(const std::filesystem::path& model, const std::filesystem::path& pairs,
                            const std::filesystem::path& out, int64_t steps) {
  Json j = rm_config(model, pairs, out, steps);
  j["reward_model"] = {{"attributes", {"happy", "long"}}, {"gating", true}, {"gating_steps", 100},
                       {"gating_lr", 0.05}};
  return j;
}

TEST(RewardModelRun, AMultiObjectiveModelRegressesRatingsAndFitsAGatingLayer) {
  test::TempDir dir;
  const auto model = test::make_tiny_model(dir);
  const auto pairs = write_rated_cat_pairs(dir, 96);
  TrainRunOptions quiet;
  quiet.quiet = true;
  TrainRunSummary s =
      run_training(train_config_from_json(multi_objective_config(model, pairs, dir / "mo", 30), "mo"), quiet);
  auto m = read_jsonl(dir / "mo/metrics.jsonl");
  ASSERT_EQ(m.size(), 30u);
  EXPECT_LT(m.back()["loss/rm_rating"].get<double>(), m.front()["loss/rm_rating"].get<double>());
  EXPECT_FALSE(m.back().contains("loss/rm")) << "no Bradley-Terry head";
  // Two named outputs, and the gating layer beside them.
  const ModelConfig c = HfModelDir(s.final_model).config();
  EXPECT_EQ(c.num_labels, 2);
  EXPECT_EQ(c.label_names, (std::vector<std::string>{"happy", "long"}));
  ASSERT_TRUE(std::filesystem::exists(s.final_model / kGatingFile));
  // Held out: each head correlates with its attribute; the gated reward prefers chosen.
  const Json& after = s.preference_after;
  EXPECT_EQ(after["readout"], "gating over [\"happy\",\"long\"]");
  EXPECT_GT(after["attributes"]["happy"]["pearson"].get<double>(), 0.9) << after.dump();
  EXPECT_GT(after["attributes"]["long"]["pearson"].get<double>(), 0.9) << after.dump();
  EXPECT_LT(after["attributes"]["long"]["pair_accuracy"].get<double>(), 0.1) << "long alone prefers the rejected";
  EXPECT_EQ(after["accuracy"].get<double>(), 1.0) << after.dump();
  EXPECT_GT(after["gating_fit"]["accuracy_after"].get<double>(), after["gating_fit"]["accuracy_before"].get<double>());
  EXPECT_TRUE(after["ungated"].is_object());
  EXPECT_EQ(s.preference_before["readout"], "direction [0.5,0.5]");
  // The reward reads the directory through its gating layer.
  RewardSet set = make_reward_set(Json::array({{{"type", "reward_model"}, {"model", s.final_model.string()}}}), "cfg",
                                  model_reward_factories());
  RewardGroup g;
  g.prompt = "Tim went to the beach.";
  for (const char* t : {" The cat sang and was happy.", " The cat sang and was sad."}) {
    RewardSample x;
    x.completion = t;
    g.samples.push_back(x);
  }
  const auto r = set.components().at(0).reward->score(g);
  EXPECT_GT(*r[0].score, *r[1].score);
}

TEST(RewardModelRun, AMultiObjectiveRunResumesExactlyGatingIncluded) {
  test::TempDir dir;
  const auto model = test::make_tiny_model(dir);
  const auto pairs = write_rated_cat_pairs(dir, 40);
  test::straight_and_resumed(
      [&](const std::filesystem::path& out, int64_t steps) {
        return train_config_from_json(multi_objective_config(model, pairs, out, steps), "mo");
      },
      dir, 4, 2, {"rm_rating"});
  EXPECT_EQ(read_file(dir / "a/checkpoints/step-4/model" / kGatingFile),
            read_file(dir / "b/checkpoints/step-4/model" / kGatingFile));
  // A resume with nothing left to do keeps the finished run's gating layer.
  TrainRunOptions resume;
  resume.quiet = true;
  resume.resume = true;
  TrainRunSummary again =
      run_training(train_config_from_json(multi_objective_config(model, pairs, dir / "a", 4), "mo"), resume);
  EXPECT_EQ(again.preference_after["readout"], "gating over [\"happy\",\"long\"]");
}

// Step-labelled stories: the second step is right when the cat is happy.
std::filesystem::path write_step_stories(const test::TempDir& dir, int n) {
  const char* names[] = {"Tom", "Lily", "Ben", "Sue", "Max", "Anna", "Tim", "Mia"};
  const char* acts[] = {"played", "ran", "sat", "jumped", "slept", "sang"};
  std::string text;
  for (int i = 0; i < n; ++i) {
    const bool happy = i % 2 == 0;
    Json r = {{"prompt", std::string(names[i % 8]) + " went out."},
              {"steps", {std::string(" The cat ") + acts[(i / 2) % 6], happy ? " It was happy" : " It was sad"}},
              {"labels", {1, happy ? 1 : 0}}};
    text += r.dump() + "\n";
  }
  write_file_atomic(dir / "steps.jsonl", text);
  return dir / "steps.jsonl";
}

Json prm_config(const std::filesystem::path& model, const std::filesystem::path& steps, const std::filesystem::path& out,
                int64_t n_steps) {
  Json j = Json::parse(R"({
    "trainer": {"kind": "rm"},
    "process": {"batch_size": 8, "data": {"shuffle": true, "eval_size": 16, "delimiter": "."}},
    "algorithm": {"micro_batch_size": 6},
    "optim": {"lr": 0.003},
    "run": {"checkpoint_every": 2, "seed": 3}
  })");
  j["model"]["path"] = model.string();
  j["process"]["data"]["path"] = steps.string();
  j["run"]["out_dir"] = out.string();
  j["run"]["steps"] = n_steps;
  return j;
}

TEST(ProcessRewardModelRun, LearnsStepLabelsThatHoldOnHeldOutSolutionsAndResumesExactly) {
  test::TempDir dir;
  const auto model = test::make_tiny_model(dir);
  const auto steps = write_step_stories(dir, 96);
  TrainRunOptions quiet;
  quiet.quiet = true;
  TrainRunSummary s = run_training(train_config_from_json(prm_config(model, steps, dir / "prm", 30), "prm"), quiet);
  EXPECT_TRUE(s.process);
  const Json j = s.to_json();
  ASSERT_TRUE(j.contains("process_after")) << j.dump();
  EXPECT_FALSE(j.contains("preference_after"));
  const Json& after = j["process_after"];
  EXPECT_EQ(after["solutions"], 16);
  EXPECT_EQ(after["steps"], 32);
  EXPECT_NEAR(after["label_mean"].get<double>(), 0.75, 1e-9);
  EXPECT_GE(after["step_accuracy"].get<double>(), 0.95) << after.dump();
  EXPECT_LT(after["bce"].get<double>(), j["process_before"]["bce"].get<double>());
  EXPECT_GE(after["first_error"].get<double>(), 0.9) << "the sad step is the first one judged wrong";
  auto m = read_jsonl(dir / "prm/metrics.jsonl");
  ASSERT_EQ(m.size(), 30u);
  EXPECT_LT(m.back()["loss/prm"].get<double>(), m.front()["loss/prm"].get<double>());
  EXPECT_EQ(HfModelDir(s.final_model).config().num_labels, 1);
  // The saved PRM as a reward: the sad step costs, the happy one does not (clip at 0.5).
  RewardSet set = make_reward_set(Json::array({{{"type", "process_reward"},
                                                {"model", s.final_model.string()},
                                                {"delimiter", "."},
                                                {"bounding", "clip"}}}),
                                  "cfg", model_reward_factories());
  RewardGroup g;
  g.prompt = "Ben went out.";
  for (const char* c : {" The cat sang. It was happy", " The cat sang. It was sad"}) {
    RewardSample x;
    x.completion = c;
    g.samples.push_back(x);
  }
  const auto r = set.components().at(0).reward->score(g);
  double happy = 0, sad = 0;
  for (float v : r[0].token_rewards) happy += v;
  for (float v : r[1].token_rewards) sad += v;
  EXPECT_GT(happy, sad);
  EXPECT_LT(sad, -0.2);
  // Resume: bit-identical weights.
  test::straight_and_resumed(
      [&](const std::filesystem::path& out, int64_t n) {
        return train_config_from_json(prm_config(model, steps, out, n), "prm");
      },
      dir, 4, 2, {"prm"});
}

TEST(ProcessRewardModelRun, ItsStepRewardsReachTheStepsLastTokensInRl) {
  test::TempDir dir;
  const auto model = test::make_tiny_model(dir);
  const auto steps = write_step_stories(dir, 32);
  TrainRunOptions quiet;
  quiet.quiet = true;
  Json pj = prm_config(model, steps, dir / "prm", 4);
  pj["process"]["data"]["delimiter"] = ",";
  pj["process"]["data"]["path"] = test::write_fixture(dir, "space_steps.jsonl",
                                                      "{\"prompt\": \"a\", \"steps\": [\"x\", \"y\"], \"labels\": [1, 0]}\n"
                                                      "{\"prompt\": \"b\", \"steps\": [\"y\", \"x\"], \"labels\": [0, 1]}\n");
  pj["process"]["data"]["eval_size"] = 0;
  pj["process"]["batch_size"] = 2;
  const TrainRunSummary prm = run_training(train_config_from_json(pj, "prm"), quiet);
  Json j = Json::parse(R"({
    "data": {"preset": "arithmetic", "eval_size": 4, "arithmetic": {"n_problems": 40}},
    "rollout": {"prompts_per_step": 2, "group_size": 4, "max_new_tokens": 12},
    "algorithm": {"micro_batch_size": 4, "credit": "token"},
    "optim": {"lr": 0.001},
    "run": {"seed": 5, "samples_every": 1}
  })");
  j["reward"] = Json::array({{{"type", "process_reward"}, {"model", prm.final_model.string()}, {"delimiter", ","},
                              {"bounding", "none"}},
                             {{"type", "math"}, {"answer_format", "gsm8k"}, {"weight", 0.0}}});
  j["model"]["path"] = model.string();
  j["run"]["out_dir"] = (dir / "rl").string();
  j["run"]["steps"] = 2;
  run_training(train_config_from_json(j, "rl"), quiet);
  auto m = read_jsonl(dir / "rl/metrics.jsonl");
  ASSERT_EQ(m.size(), 2u);
  ASSERT_TRUE(m[0].contains("reward/process_reward/token_sum")) << m[0].dump();
  // bounding none: every step (at least the last token) earns its probability, so the per-episode sum is positive.
  EXPECT_GT(m[0]["reward/process_reward/token_sum"].get<double>(), 0.0);
  EXPECT_EQ(m[0]["reward/process_reward/mean"], 0.0) << "the score is 0: the rewards count once, per token";
}

// Chained sums labelled by the policy's rollouts: the tiny random policy never
// writes the right answer, so every step before the last gets 0 from its
// rollouts, and the last step is the solution's own correctness (the gold
// label of the answer step).
TEST(ProcessRewardModelRun, MonteCarloLabelsComeFromThePolicysRolloutsAndSurviveResume) {
  test::TempDir dir;
  const auto model = test::make_tiny_model(dir);
  auto config = [&](const std::filesystem::path& out, int64_t n) {
    Json j = Json::parse(R"({
      "trainer": {"kind": "rm"},
      "process": {"batch_size": 4, "labels": "monte_carlo", "mc_rollouts": 3,
                  "data": {"preset": "arithmetic", "prompt_template": "{prompt}", "delimiter": "; ", "n_terms": 3,
                           "eval_size": 4, "arithmetic": {"n_problems": 12, "min_digits": 1, "max_digits": 1}}},
      "reward": [{"type": "math", "answer_format": "gsm8k"}],
      "rollout": {"max_new_tokens": 6},
      "algorithm": {"micro_batch_size": 4},
      "optim": {"lr": 0.003},
      "run": {"checkpoint_every": 2, "seed": 3}
    })");
    j["model"]["path"] = model.string();
    j["run"]["out_dir"] = out.string();
    j["run"]["steps"] = n;
    return train_config_from_json(j, "mc");
  };
  TrainRunOptions quiet;
  quiet.quiet = true;
  const TrainRunSummary s = run_training(config(dir / "mc", 2), quiet);
  const Json rep = s.to_json()["process_after"]["monte_carlo_labels"];
  EXPECT_EQ(rep["solutions"], 8);
  EXPECT_EQ(rep["steps"], 24);
  EXPECT_EQ(rep["rollouts"], 8 * 2 * 3);
  // The labels the run trained on, against the gold labels of the same solutions.
  const Json saved = read_json_file((dir / "mc/monte_carlo_labels.json").string());
  StepDatasetOptions o;
  o.preset = "arithmetic";
  o.prompt_template = "{prompt}";
  o.delimiter = "; ";
  o.n_terms = 3;
  o.eval_size = 4;
  o.seed = 3;
  o.arithmetic.n_problems = 12;
  o.arithmetic.min_digits = o.arithmetic.max_digits = 1;
  const StepDataset gold = StepDataset::load(o);
  ASSERT_EQ(saved.size(), 8u);
  int64_t agree = 0;
  for (const StepExample& e : gold.train()) {
    const auto labels = saved.at(e.id).get<std::vector<double>>();
    ASSERT_EQ(labels.size(), 3u);
    EXPECT_EQ(labels[0], 0.0) << "no rollout of a random policy reaches the answer";
    EXPECT_EQ(labels[1], 0.0);
    EXPECT_EQ(labels[2], e.labels[2]) << "the answer step: the solution's own correctness";
    for (size_t k = 0; k < 3; ++k) agree += (labels[k] > 0.5) == (e.labels[k] > 0.5);
  }
  EXPECT_NEAR(rep["agreement"].get<double>(), static_cast<double>(agree) / 24.0, 1e-12);
  // Resume: the saved labels, bit-identical weights.
  test::straight_and_resumed(config, dir, 4, 2, {"prm"});
  // Without a [[reward]] there is nothing to judge the rollouts.
  Json j = Json::parse(R"({"trainer": {"kind": "rm"}, "process": {"labels": "monte_carlo", "data": {"preset": "arithmetic"}}})");
  j["model"]["path"] = model.string();
  EXPECT_NE(test::error_of([&] { train_config_from_json(j, "cfg.toml"); }).find("judges the policy's rollouts"),
            std::string::npos);
}

TEST(ProcessRewardModelRun, ConfigErrorsNameTheKey) {
  const Json ok = prm_config("/m", "/s.jsonl", "/o", 2);
  EXPECT_NO_THROW(train_config_from_json(ok, "cfg.toml"));
  Json bad = ok;
  bad["preference"]["data"] = {{"path", "/p.jsonl"}};
  test::expect_config_error(bad, "not both");
  bad = ok;
  bad["reward_model"]["attributes"] = {"a"};
  test::expect_config_error(bad, "a process reward model has one head");
  bad = ok;
  bad["trainer"]["kind"] = "dpo";
  bad["preference"]["data"] = {{"path", "/p.jsonl"}};
  test::expect_config_error(bad, "[process.data] is the data of trainer.kind = \"rm\"");
  bad = ok;
  bad["process"]["data"]["delimiter"] = "";
  test::expect_config_error(bad, "delimiter must not be empty");
}

TEST(RewardModelRun, ConfigErrorsNameTheKey) {
  const Json ok = rm_config("/m", "/p.jsonl", "/o", 2);
  EXPECT_NO_THROW(train_config_from_json(ok, "cfg.toml"));
  Json bad = ok;
  bad["preference"].erase("data");
  test::expect_config_error(bad, "trainer.kind = \"rm\" needs [preference.data]");
  bad = ok;
  bad["data"] = {{"preset", "arithmetic"}};
  bad["reward"] = Json::array({{{"type", "math"}}});
  test::expect_config_error(bad, "a reward model does not generate");  // without [sft], [data] has nothing to serve
  bad = ok;
  bad["algorithm"]["kl_beta"] = 0.1;
  test::expect_config_error(bad, "algorithm.kl_beta needs token log-probs");
  bad = ok;
  bad["reward_model"]["margin"] = -1;
  test::expect_config_error(bad, "reward_model.margin");
  bad = ok;
  bad["reward_model"]["margn"] = 1;
  test::expect_config_error(bad, "margn");
  bad = ok;
  bad["run"]["sft_control"] = true;
  test::expect_config_error(bad, "run.sft_control");
  bad = ok;
  bad["reward_model"]["gating"] = true;
  test::expect_config_error(bad, "reward_model.gating weighs the heads of reward_model.attributes");
  bad = ok;
  bad["reward_model"]["attributes"] = {"a", "a"};
  test::expect_config_error(bad, "reward_model.attributes has 'a' twice");
  bad = ok;
  bad["reward_model"]["attributes"] = {"a"};
  bad["reward_model"]["margin"] = 1.0;
  test::expect_config_error(bad, "with reward_model.attributes the heads regress ratings");
  bad = ok;
  bad["reward_model"]["gating_temperature"] = 0;
  test::expect_config_error(bad, "reward_model.gating_temperature");
}

TEST(RewardModelRun, AttributesNoPairRatesAreAnError) {
  test::TempDir dir;
  const auto model = test::make_tiny_model(dir);
  const auto pairs = test::write_cat_pairs(dir, 24);
  TrainRunOptions quiet;
  quiet.quiet = true;
  Json j = rm_config(model, pairs, dir / "x", 2);
  j["reward_model"]["attributes"] = {"helpful"};
  const std::string e = test::error_of([&] { run_training(train_config_from_json(j, "rm.toml"), quiet); });
  EXPECT_NE(e.find("no training pair rates any of them"), std::string::npos) << e;
}

}  // namespace
}  // namespace rlf

// LoRA as whole runs on a tiny random model: GRPO (with a KL term against the
// base with the adapters off), DPO and SFT train the adapters only (the base
// in every checkpoint is the model as loaded, the optimizer holds adapter
// state only), resume bit for bit, start from a saved adapter, and refuse
// what LoRA cannot do here.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "model/lora.h"
#include "model/safetensors.h"
#include "tests/support/test_env.h"
#include "tests/train/run_fixtures.h"
#include "train/metrics.h"
#include "train/train_run.h"

namespace rlf {
namespace {

using test::grpo_run_config;
using test::make_tiny_model;

Json with_lora(Json j) {
  j["lora"] = {{"enabled", true}, {"rank", 4}, {"alpha", 8}, {"targets", {"q_proj", "v_proj", "down_proj"}}};
  j["optim"]["lr"] = 0.01;
  return j;
}

// Every tensor of `file` is an adapter's (optimizer state names the parameter).
void expect_adapter_state_only(const std::filesystem::path& file) {
  SafetensorsFile f(file);
  ASSERT_FALSE(f.tensors().empty());
  for (const auto& [name, view] : f.tensors()) EXPECT_TRUE(is_lora_parameter(name)) << name;
}

bool adapters_equal(const std::filesystem::path& a, const std::filesystem::path& b) {
  SafetensorsFile fa(a / "adapter_model.safetensors"), fb(b / "adapter_model.safetensors");
  const auto ta = fa.tensors(), tb = fb.tensors();
  if (ta.size() != tb.size()) return false;
  for (const auto& [name, view] : ta) {
    if (!tb.count(name)) return false;
    if (!torch::equal(tensor_from_view(view), tensor_from_view(tb.at(name)))) return false;
  }
  return true;
}

TEST(LoraRun, GrpoTrainsTheAdaptersOnlyAndResumesExactly) {
  test::TempDir dir;
  const auto model = make_tiny_model(dir);
  auto config = [&](const std::filesystem::path& out, int64_t steps) {
    Json j = with_lora(grpo_run_config(model, out, steps));
    j["algorithm"]["kl_beta"] = 0.05;  // the reference is the base with the adapters off
    j["lora"]["dropout"] = 0.1;        // masks drawn per step: resume must draw the same
    return train_config_from_json(j, "lora");
  };
  auto [a, b] = test::straight_and_resumed(config, dir, 4, 2, {"policy", "kl"});
  ASSERT_EQ(a.size(), 4u);
  const auto ck = dir / "a/checkpoints/step-4";
  EXPECT_TRUE(adapters_equal(ck / "adapter", dir / "b/checkpoints/step-4/adapter")) << "resume changed the adapters";
  EXPECT_FALSE(adapters_equal(ck / "adapter", dir / "a/checkpoints/step-2/adapter")) << "the adapters did not train";
  test::expect_same_parameters(ck / "model", model);  // the base never moves
  expect_adapter_state_only(ck / "optimizer.safetensors");
  for (const auto& m : a) {
    EXPECT_TRUE(m.contains("kl/ref")) << m.dump();
    EXPECT_TRUE(std::isfinite(m.value("loss/policy", std::nan(""))));
  }
  EXPECT_GT(a.back()["kl/ref"].get<double>(), 0.0);  // (DpoAndSftTrainAdapters: the reference starts equal)
  for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i]["loss/policy"], b[i]["loss/policy"]) << "step " << i + 1;

  // The saved adapter starts another run (lora.adapter) from where this one ended.
  Json j = with_lora(grpo_run_config(model, dir / "c", 1));
  j["lora"]["adapter"] = (ck / "adapter").string();
  j["lora"]["rank"] = 16;  // ignored: the adapter's own r and alpha are used
  auto s = run_training(train_config_from_json(j, "from_adapter"), test::quiet_run());
  EXPECT_EQ(s.steps, 1);
  SafetensorsFile started(dir / "c/checkpoints/step-1/adapter/adapter_model.safetensors");
  EXPECT_EQ(started.view("base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight").shape[0], 4);
}

TEST(LoraRun, DpoAndSftTrainAdapters) {
  test::TempDir dir;
  const auto model = make_tiny_model(dir);
  const auto pairs = test::write_cat_pairs(dir, 48);
  Json d = with_lora(Json::parse(R"({
    "trainer": {"kind": "dpo"},
    "preference": {"beta": 0.5, "batch_size": 8, "data": {"eval_size": 8}},
    "algorithm": {"micro_batch_size": 8},
    "run": {"checkpoint_every": 3, "seed": 3, "steps": 6}
  })"));
  d["model"]["path"] = model.string();
  d["preference"]["data"]["path"] = pairs.string();
  d["run"]["out_dir"] = (dir / "dpo").string();
  auto s = run_training(train_config_from_json(d, "dpo"), test::quiet_run());
  EXPECT_EQ(s.steps, 6);
  // The reference is the base (the adapters off): every implicit reward starts at 0, to the last bits of two
  // forwards the threads may sum in different orders (measured: -8.9e-8 at 2 threads on a Sapphire Rapids Xeon).
  EXPECT_NEAR(s.preference_before["margin"].get<double>(), 0.0, 1e-6);
  EXPECT_GT(s.preference_after["margin"].get<double>(), 0.0) << s.preference_after.dump();
  test::expect_same_parameters(dir / "dpo/checkpoints/step-6/model", model);
  expect_adapter_state_only(dir / "dpo/checkpoints/step-6/optimizer.safetensors");

  Json t = Json::parse(R"({
    "trainer": {"kind": "sft"},
    "sft": {"batch_size": 8, "micro_batch_size": 8},
    "run": {"checkpoint_every": 4, "seed": 3, "steps": 4}
  })");
  t = with_lora(t);
  t["model"]["path"] = model.string();
  t["sft"]["data"] = {{"preset", "arithmetic"}, {"arithmetic", {{"n_problems", 40}}}};
  t["run"]["out_dir"] = (dir / "sft").string();
  run_training(train_config_from_json(t, "sft"), test::quiet_run());
  const auto m = read_jsonl(dir / "sft/metrics.jsonl");
  ASSERT_EQ(m.size(), 4u);
  EXPECT_LT(m.back()["loss/ce"].get<double>(), m.front()["loss/ce"].get<double>());
  test::expect_same_parameters(dir / "sft/checkpoints/step-4/model", model);
}

// A reward model with LoRA: adapters on the backbone, the score head trained
// beside them (saved with the adapters, PEFT's modules_to_save); resumes exactly.
TEST(LoraRun, ARewardModelTrainsItsAdaptersAndHead) {
  test::TempDir dir;
  const auto model = make_tiny_model(dir);
  const auto pairs = test::write_cat_pairs(dir, 48);
  auto config = [&](const std::filesystem::path& out, int64_t steps) {
    Json j = with_lora(Json::parse(R"({
      "trainer": {"kind": "rm"},
      "preference": {"batch_size": 8, "data": {"eval_size": 8}},
      "algorithm": {"micro_batch_size": 8},
      "run": {"checkpoint_every": 2, "seed": 3}
    })"));
    j["model"]["path"] = model.string();
    j["preference"]["data"]["path"] = pairs.string();
    j["run"]["out_dir"] = out.string();
    j["run"]["steps"] = steps;
    return train_config_from_json(j, "rm");
  };
  auto [a, b] = test::straight_and_resumed(config, dir, 4, 2, {"rm"});
  ASSERT_EQ(a.size(), 4u);
  EXPECT_LT(a.back()["loss/rm"].get<double>(), a.front()["loss/rm"].get<double>());
  const auto ck = dir / "a/checkpoints/step-4";
  EXPECT_TRUE(adapters_equal(ck / "adapter", dir / "b/checkpoints/step-4/adapter"));
  const Json cfg = read_json_file((ck / "adapter/adapter_config.json").string());
  EXPECT_EQ(cfg["task_type"], "SEQ_CLS");
  EXPECT_EQ(cfg["modules_to_save"], Json::array({"score"}));
  SafetensorsFile adapter(ck / "adapter/adapter_model.safetensors");
  EXPECT_TRUE(adapter.contains("base_model.model.score.weight"));
  // The optimizer holds the adapters and the head, nothing of the backbone.
  SafetensorsFile opt(ck / "optimizer.safetensors");
  for (const auto& [name, view] : opt.tensors())
    EXPECT_TRUE(is_lora_parameter(name) || name.find("score.weight") != std::string::npos) << name;
}

TEST(LoraRun, WhatLoraCannotDoIsRefused) {
  const Json ok = with_lora(grpo_run_config("/m", "/o", 2));
  Json bad = ok;
  bad["lora"]["targets"] = {"q_proj", "qkv"};
  test::expect_config_error(bad, "lora.targets[1] = 'qkv' is not a projection");
  bad = ok;
  bad["rollout"]["max_staleness"] = 1;
  test::expect_config_error(bad, "lora.enabled: rollout.max_staleness > 0");
  bad = ok;
  bad["algorithm"]["credit"] = "gae";
  bad["value"]["shared"] = true;
  test::expect_config_error(bad, "lora.enabled: value.shared");
  bad = ok;
  bad["trainer"]["kind"] = "rm";
  bad.erase("data");
  bad["preference"]["data"]["path"] = "/pairs.jsonl";
  bad["reward_model"]["train_backbone"] = false;
  test::expect_config_error(bad, "lora.enabled: reward_model.train_backbone = false");

  // A checkpoint without adapters does not resume into a LoRA run (and the other way round).
  test::TempDir dir;
  const auto model = make_tiny_model(dir);
  run_training(train_config_from_json(grpo_run_config(model, dir / "full", 2), "full"), test::quiet_run());
  TrainRunOptions resume = test::quiet_run();
  resume.resume = true;
  const std::string e = test::error_of([&] {
    run_training(train_config_from_json(with_lora(grpo_run_config(model, dir / "full", 4)), "full"), resume);
  });
  EXPECT_NE(e.find("the model to restore has LoRA adapters but the checkpoint holds none"), std::string::npos) << e;
  // A missing adapter directory is named before any step.
  Json j = with_lora(grpo_run_config(model, dir / "missing", 2));
  j["lora"]["adapter"] = (dir / "nowhere").string();
  const std::string e2 = test::error_of([&] { run_training(train_config_from_json(j, "missing"), test::quiet_run()); });
  EXPECT_NE(e2.find("lora.adapter"), std::string::npos) << e2;
  EXPECT_NE(e2.find("is not a LoRA adapter directory"), std::string::npos) << e2;
}

}  // namespace
}  // namespace rlf

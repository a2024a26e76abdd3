// Helpers of the whole-run tests (test_grpo_run.cpp, test_preference_run.cpp,
// test_reward_model_run.cpp): a tiny random model on disk, preference pairs
// with one learnable rule, and the straight-versus-resumed comparison.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "model/loader.h"
#include "tests/support/test_env.h"
#include "train/metrics.h"
#include "train/train_run.h"
#include "util/fs.h"
#include "util/json_util.h"

namespace rlf::test {

// A 2-layer random stories260K-shaped model with the real tok512 tokenizer, saved in dir/tiny.
inline std::filesystem::path make_tiny_model(const TempDir& dir) {
  ModelConfig c = ModelConfig::preset("stories260K");
  c.num_hidden_layers = 2;
  auto model = make_random_model(c, 1, torch::kFloat32, torch::kCPU);
  SaveOptions so;
  so.tokenizer_source = shared_path("models/stories260K/tok512.bin");
  save_model(*model, dir / "tiny", so);
  return dir / "tiny";
}

// A GRPO run on the synthetic arithmetic task (math reward + a format reward),
// 2 prompts x 4 samples, 2 epochs, a checkpoint every 2 steps, seed 7.
inline Json grpo_run_config(const std::filesystem::path& model, const std::filesystem::path& out, int64_t steps) {
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

// Pairs whose preference is one learnable rule: the chosen story is about a
// happy cat, the rejected one about a sad cat; the rest of the words vary.
inline std::filesystem::path write_cat_pairs(const TempDir& dir, int n) {
  const char* names[] = {"Tom", "Lily", "Ben", "Sue", "Max", "Anna", "Tim", "Mia"};
  const char* places[] = {"park", "garden", "house", "school", "forest", "beach"};
  const char* acts[] = {"played", "ran", "sat", "jumped", "slept", "sang"};
  std::string text;
  for (int i = 0; i < n; ++i) {
    const std::string who = names[i % 8], where = places[(i / 8) % 6], act = acts[(i * 7) % 6];
    Json r = {{"prompt", who + " went to the " + where + "."},
              {"chosen", " The cat " + act + " and was happy."},
              {"rejected", " The cat " + act + " and was sad."}};
    text += r.dump() + "\n";
  }
  write_file_atomic(dir / "pairs.jsonl", text);
  return dir / "pairs.jsonl";
}

// The options of a test run: no progress bar, no summary table.
inline TrainRunOptions quiet_run() {
  TrainRunOptions o;
  o.quiet = true;
  return o;
}

// Loading the config `j` fails with an error that contains `needle`.
inline void expect_config_error(const Json& j, const std::string& needle) {
  const std::string e = error_of([&] { train_config_from_json(j, "cfg.toml"); });
  EXPECT_NE(e.find(needle), std::string::npos) << e;
}

// A 2-layer random stories260K-shaped model in memory (fp32, CPU).
inline CausalLM tiny_random_model(uint64_t seed) {
  ModelConfig c = ModelConfig::preset("stories260K");
  c.num_hidden_layers = 2;
  return make_random_model(c, seed, torch::kFloat32, torch::kCPU);
}

// Whether two saved models have bit-identical parameters (expected: `same`).
inline void expect_same_parameters(const std::filesystem::path& a, const std::filesystem::path& b, bool same = true) {
  LoadedModel ma = load_model(a), mb = load_model(b);
  auto pa = ma.model->named_parameters(), pb = mb.model->named_parameters();
  bool all_equal = true;
  for (const auto& p : pa) all_equal &= torch::equal(p.value(), pb[p.key()]);
  EXPECT_EQ(all_equal, same) << a << " vs " << b;
}

// One config run `steps` steps straight (dir/a) and stopped after `first`
// steps then resumed to `steps` (dir/b): the final weights must be equal.
// Returns the two metrics logs (a, b).
using ConfigAt = std::function<TrainConfig(const std::filesystem::path& out, int64_t steps)>;
inline std::pair<std::vector<Json>, std::vector<Json>> straight_and_resumed(const ConfigAt& config, const TempDir& dir,
                                                                     int64_t steps, int64_t first) {
  TrainRunOptions quiet;
  quiet.quiet = true;
  run_training(config(dir / "a", steps), quiet);
  run_training(config(dir / "b", first), quiet);
  TrainRunOptions resume = quiet;
  resume.resume = true;
  run_training(config(dir / "b", steps), resume);
  const std::string last = "checkpoints/step-" + std::to_string(steps) + "/model";
  expect_same_parameters(dir / ("a/" + last), dir / ("b/" + last));
  return {read_jsonl(dir / "a/metrics.jsonl"), read_jsonl(dir / "b/metrics.jsonl")};
}

}  // namespace rlf::test

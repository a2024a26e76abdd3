// Helpers of the whole-run tests (test_grpo_run.cpp, test_preference_run.cpp,
// test_reward_model_run.cpp, ...): a tiny random model on disk, preference
// pairs with one learnable rule, the straight-versus-resumed comparison, and
// the checks that a run trained (weights moved, each loss term at work).
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <functional>
#include <iostream>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "model/loader.h"
#include "model/safetensors.h"
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

// Every weight tensor of a model directory or a checkpoint directory (the
// model, a LoRA adapter, a companion such as PPO's critic), in fp64, keyed
// "<sub-directory>/<tensor>" with `root` naming the directory itself
// ("model" for a model directory); optimizer and RNG state are left out.
inline std::map<std::string, torch::Tensor> weights_in(const std::filesystem::path& dir,
                                                       const std::string& root = "model") {
  std::map<std::string, torch::Tensor> out;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir)) {
    const std::string file = e.path().filename().string();
    if (!e.is_regular_file() || e.path().extension() != ".safetensors" || file == "optimizer.safetensors" ||
        file == "rng.safetensors")
      continue;
    const std::string sub = std::filesystem::relative(e.path().parent_path(), dir).string();
    SafetensorsFile f(e.path());
    for (const auto& [name, view] : f.tensors())
      out[(sub == "." ? root : sub) + "/" + name] = tensor_from_view(view).to(torch::kFloat64);
  }
  return out;
}

// A greedy pass@1 measured on `n_prompts` held-out prompts (one sample each):
// k / n_prompts for a whole k in [0, n_prompts]; -1 (no held-out split) fails.
inline void expect_pass1_over(double pass1, int n_prompts, const std::string& what) {
  const double k = pass1 * n_prompts;
  EXPECT_TRUE(k >= 0 && k <= n_prompts && std::abs(k - std::round(k)) < 1e-9)
      << what << " = " << pass1 << " is not a share of " << n_prompts << " held-out prompts";
}

// How far `after` moved from `before`: || after - before || / || before || over
// the tensors both hold with one shape, keys starting with `group`.
inline double relative_change(const std::map<std::string, torch::Tensor>& before,
                              const std::map<std::string, torch::Tensor>& after, const std::string& group) {
  double diff = 0, norm = 0;
  for (const auto& [key, a] : after) {
    auto it = before.find(key);
    if (key.rfind(group + "/", 0) != 0 || it == before.end() || !it->second.sizes().equals(a.sizes())) continue;
    diff += (a - it->second).pow(2).sum().item<double>();
    norm += it->second.pow(2).sum().item<double>();
  }
  return norm > 0 ? std::sqrt(diff / norm) : std::nan("");
}

// Training moved the weights by more than rounding: a weight without a
// gradient stays bit-identical under AdamW (or, with optim.weight_decay,
// shrinks by lr * decay per step: 1e-5 at lr 1e-3 and decay 0.01), one fp32
// rounding is ~6e-8 relative, while an AdamW step with a gradient moves each
// weight by about lr. The resume tests' runs measure 0.018-0.46 (printed as
// "[ resume ] ... moved"), 180x this bound or more.
inline constexpr double kMinRelativeChange = 1e-4;

// Each of `terms` (the trainer's loss terms, as metrics name them:
// "loss/<term>") is logged, finite in every step, and non-zero in at least
// one: a term whose weights (or advantages) were all zero logs exactly 0 and
// contributes no gradient. No other term is logged.
inline void expect_terms_trained(const std::vector<Json>& metrics, const std::vector<std::string>& terms) {
  std::set<std::string> logged, nonzero;
  for (const Json& m : metrics)
    for (const auto& [key, v] : m.items()) {
      if (key.rfind("loss/", 0) != 0) continue;
      const std::string term = key.substr(5);
      logged.insert(term);
      EXPECT_TRUE(v.is_number() && std::isfinite(v.get<double>())) << key << " = " << v.dump();
      if (v.is_number() && v.get<double>() != 0.0) nonzero.insert(term);
    }
  EXPECT_EQ(logged, std::set<std::string>(terms.begin(), terms.end())) << "the loss terms logged";
  for (const std::string& t : terms)
    EXPECT_TRUE(nonzero.count(t)) << "loss/" << t << " is 0 in every step: the term never trained";
}

// One config run `steps` steps straight (dir/a) and stopped after `first`
// steps then resumed to `steps` (dir/b). Checks that
//   - the final weights of both are bit-identical;
//   - training moved the weights (kMinRelativeChange): the straight run's
//     final model against the initial one (skipped for LoRA runs, whose base
//     never moves), and the resumed run's final weights (model, adapter,
//     critic) against its own checkpoint at `first`, so the resumed steps trained;
//   - each of `terms` trained (expect_terms_trained).
// Returns the two metrics logs (a, b).
using ConfigAt = std::function<TrainConfig(const std::filesystem::path& out, int64_t steps)>;
inline std::pair<std::vector<Json>, std::vector<Json>> straight_and_resumed(const ConfigAt& config, const TempDir& dir,
                                                                     int64_t steps, int64_t first,
                                                                     const std::vector<std::string>& terms) {
  TrainRunOptions quiet;
  quiet.quiet = true;
  const TrainConfig straight = config(dir / "a", steps);
  run_training(straight, quiet);
  run_training(config(dir / "b", first), quiet);
  const auto at_first = weights_in(dir / ("b/checkpoints/step-" + std::to_string(first)), "");
  TrainRunOptions resume = quiet;
  resume.resume = true;
  run_training(config(dir / "b", steps), resume);
  const std::string last = "checkpoints/step-" + std::to_string(steps);
  expect_same_parameters(dir / ("a/" + last + "/model"), dir / ("b/" + last + "/model"));

  const auto final_a = weights_in(dir / ("a/" + last), ""), final_b = weights_in(dir / ("b/" + last), "");
  std::set<std::string> groups;
  for (const auto& [key, t] : final_b) groups.insert(key.substr(0, key.rfind('/')));
  if (!groups.count("adapter")) {
    const double moved = relative_change(weights_in(straight.model_path()), final_a, "model");
    std::cout << "[ resume ] model: initial -> step " << steps << " moved " << moved << " (relative)\n";
    EXPECT_GT(moved, kMinRelativeChange) << "the straight run left the model where it started";
  }
  for (const std::string& g : groups) {
    if (g == "model" && groups.count("adapter")) continue;  // LoRA: the base never moves (the callers check it)
    const double moved = relative_change(at_first, final_b, g);
    std::cout << "[ resume ] " << g << ": step " << first << " -> " << steps << " moved " << moved << " (relative)\n";
    EXPECT_GT(moved, kMinRelativeChange) << g << " did not train after the resume (step " << first << " -> " << steps
                                         << ")";
  }
  const auto metrics_a = read_jsonl(dir / "a/metrics.jsonl");
  expect_terms_trained(metrics_a, terms);
  return {metrics_a, read_jsonl(dir / "b/metrics.jsonl")};
}

}  // namespace rlf::test

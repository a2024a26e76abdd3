// A run checks its paths and companions before it writes anything
// (train/run_preflight.h), names the key, and stops when every episode fails
// (train/failed_steps.h) instead of spending its steps and exiting 0.
#include <gtest/gtest.h>

#include "tests/train/run_fixtures.h"
#include "train/failed_steps.h"
#include "train/run_preflight.h"

namespace rlf {
namespace {

using test::error_of;

// The error of a run of `j`, and what it left in `out` (nothing, when the checks come first).
std::string run_error(const Json& j) {
  return error_of([&] { run_training(train_config_from_json(j, "run.toml"), test::quiet_run()); });
}

TEST(RunPreflight, MissingCompanionsFailBeforeAnythingIsWritten) {
  test::TempDir dir;
  const auto model = test::make_tiny_model(dir);
  const fs::path out = dir / "out";
  struct Case {
    std::string what;
    std::function<void(Json&)> set;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"lora.adapter",
       [&](Json& j) { j["lora"] = {{"enabled", true}, {"adapter", (dir / "no-adapter").string()}}; },
       "run.toml: lora.adapter: '" + (dir / "no-adapter").string() + "' is not a LoRA adapter directory: no such directory"},
      {"lora.adapter (not an adapter)",
       [&](Json& j) { j["lora"] = {{"enabled", true}, {"adapter", model.string()}}; },
       "run.toml: lora.adapter: '" + model.string() + "' is not a LoRA adapter directory: it has no adapter_config.json"},
      {"distill.teacher_path",
       [&](Json& j) {
         j["distill"] = {{"enabled", true}, {"teacher", "model"}, {"teacher_path", (dir / "no-teacher").string()}};
       },
       "run.toml: distill.teacher_path: loading model '" + (dir / "no-teacher").string() + "': no such file or directory"},
      {"value.model",
       [&](Json& j) {
         j["algorithm"]["credit"] = "gae";
         j["value"] = {{"model", (dir / "no-critic").string()}};
       },
       "run.toml: value.model: loading model '" + (dir / "no-critic").string() + "': no such file or directory"},
      {"run.eval_kl_model", [&](Json& j) { j["run"]["eval_kl_model"] = (dir / "none").string(); },
       "run.toml: run.eval_kl_model: loading model '" + (dir / "none").string() + "': no such file or directory"},
      {"run.out_dir under a device", [&](Json& j) { j["run"]["out_dir"] = "/dev/null/x"; },
       "run.toml: run.out_dir: cannot create directory '/dev/null/x': '/dev/null' is a character device, not a "
       "directory"},
      {"run.out_dir = the model", [&](Json& j) { j["run"]["out_dir"] = model.string(); },
       "run.toml: run.out_dir: '" + model.string() + "' is an input of this command"},
      {"run.warm_start_cache under a file",
       [&](Json& j) {
         j["run"]["warm_start_cache"] = (model / "config.json" / "cache").string();
         j["sft"] = {{"data", {{"preset", "arithmetic"}}}, {"steps", 2}};
       },
       "run.toml: run.warm_start_cache: cannot create directory"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    Json j = test::grpo_run_config(model, out, 1);
    c.set(j);
    const std::string e = run_error(j);
    EXPECT_EQ(e.rfind(c.message, 0), 0u) << e;
    EXPECT_FALSE(fs::exists(out)) << "written before the error: " << e;
  }
  EXPECT_TRUE(fs::is_regular_file(model / "config.json"));  // the model is untouched
}

// An adapter that exists but does not fit the policy: refused before config.json is written.
TEST(RunPreflight, AnAdapterOfAnotherModelFailsBeforeConfigJson) {
  test::TempDir dir;
  const auto model = test::make_tiny_model(dir);
  {
    ModelConfig c = ModelConfig::preset("stories260K");
    c.num_hidden_layers = 3;  // another base: a layer the policy lacks
    CausalLM other = make_random_model(c, 2, torch::kFloat32, torch::kCPU);
    LoraOptions lo;
    add_lora(*other, lo, 1);
    save_lora_adapter(*other, dir / "adapter", "other");
  }
  Json j = test::grpo_run_config(model, dir / "out", 1);
  j["lora"] = {{"enabled", true}, {"adapter", (dir / "adapter").string()}};
  const std::string e = run_error(j);
  EXPECT_EQ(e.rfind("run.toml: lora.adapter: ", 0), 0u) << e;
  EXPECT_FALSE(fs::exists(dir / "out/config.json")) << e;
}

TEST(RunPreflight, RefinementAndLessonsNeedACritic) {
  test::TempDir dir;
  for (const char* feature : {"refine", "lessons"}) {
    Json j = test::grpo_run_config(dir / "m", dir / "out", 1);
    j[feature] = {{"enabled", true}};
    EXPECT_EQ(error_of([&] { train_config_from_json(j, "run.toml"); }),
              std::string("run.toml: ") + feature + ".enabled = true needs a [critic] section: who writes the critiques "
              "(type = \"simple_gt\", \"simple\", \"text\", \"template\", \"columns\", \"self\", \"model\" or "
                  "\"endpoint\"; "
              "docs/feedback.md)");
    j["critic"] = Json::object();  // given, even empty: its type is simple_gt
    EXPECT_NO_THROW(train_config_from_json(j, "run.toml"));
  }
}

// simple_gt writes the reference answer; with none in the data every critique would fail.
TEST(RunPreflight, ASimpleGtCriticNeedsReferenceAnswers) {
  test::TempDir dir;
  const auto model = test::make_tiny_model(dir);
  std::string lines;
  for (int i = 0; i < 8; ++i) lines += Json{{"prompt", "Tell a story " + std::to_string(i)}}.dump() + "\n";
  write_file_atomic(dir / "prompts.jsonl", lines);
  Json j = test::grpo_run_config(model, dir / "out", 1);
  j["data"] = {{"path", (dir / "prompts.jsonl").string()}, {"eval_size", 2}};
  j["reward"] = Json::array({{{"type", "format"}, {"pattern", "e"}, {"match", "search"}}});
  j["refine"] = {{"enabled", true}};
  j["critic"] = {{"type", "simple_gt"}};
  const std::string e = run_error(j);
  EXPECT_NE(e.find("[critic] type = \"simple_gt\" writes each task's reference answer, and no training prompt has one"),
            std::string::npos)
      << e;
  EXPECT_FALSE(fs::exists(dir / "out/config.json")) << e;
}

TEST(FailedSteps, StopsAfterTheGivenNumberOfFailingStepsInARow) {
  const Json failing = {{"episode/count", 8.0}, {"env/errors", 8.0}};
  const Json one_works = {{"episode/count", 8.0}, {"env/errors", 7.0}};
  std::vector<Episode> episodes(2);
  episodes[1].env_error = "exited with status 3";
  FailedStepWatch w(3);
  EXPECT_FALSE(w.add(1, failing, {}));
  EXPECT_FALSE(w.add(2, failing, {}));
  EXPECT_FALSE(w.add(3, one_works, {}));  // one working episode resets the count
  EXPECT_FALSE(w.add(4, failing, episodes));
  EXPECT_FALSE(w.add(5, failing, {}));
  const auto stop = w.add(6, failing, {});
  ASSERT_TRUE(stop.has_value());
  EXPECT_EQ(*stop, "every episode failed in 3 steps in a row (steps 4 to 6, 8 episodes in the last) with an environment "
                   "error: 'exited with status 3' (1 episode). Fix the environment ([env]); run.max_failed_steps = 3 "
                   "stops such a run (0 = never)");
  FailedStepWatch never(0);
  for (int s = 1; s <= 10; ++s) EXPECT_FALSE(never.add(s, failing, episodes));
  EXPECT_FALSE(FailedStepWatch(1).add(1, Json{{"episode/count", 0.0}, {"env/errors", 0.0}}, {}));  // no episodes: no verdict
}

// The probe's case: an environment whose program exits at once fails every
// episode; the run stops with that error after run.max_failed_steps steps
// (here 2 of 50), its metrics of those steps written.
TEST(FailedSteps, ARunWhoseEveryEpisodeFailsStopsWithTheError) {
  test::TempDir dir;
  const auto model = test::make_tiny_model(dir);
  Json j = test::grpo_run_config(model, dir / "out", 50);
  j["env"] = {{"type", "external"}, {"command", {"sh", "-c", "echo broken >&2; exit 3"}}, {"echo_stderr", false}};
  j["reward"] = Json::array();
  j["run"]["max_failed_steps"] = 2;
  j["run"]["checkpoint_every"] = 0;
  const std::string e = run_error(j);
  EXPECT_EQ(e.rfind("run.toml: every episode failed in 2 steps in a row (steps 1 to 2, 8 episodes in the last) with an "
                    "environment error: '",
                    0),
            0u)
      << e;
  EXPECT_NE(e.find("exited with status 3 (stderr: broken)"), std::string::npos) << e;
  EXPECT_EQ(read_jsonl(dir / "out/metrics.jsonl").size(), 2u);
}

}  // namespace
}  // namespace rlf

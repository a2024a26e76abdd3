// Every shipped example config loads and validates (no key typo, no value
// out of range, no combination a run would refuse), and the feedback
// and recipe comparisons' configs each share one rollout-token budget, as `rlf compare`
// requires.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <set>
#include <string>

#include "tests/support/test_env.h"
#include "eval/eval_config.h"
#include "config/toml_config.h"
#include "train/serve_learner.h"
#include "train/train_config.h"

namespace rlf {
namespace {

TEST(Examples, EveryShippedConfigLoads) {
  const std::filesystem::path root = test::source_path("examples");
  int64_t n = 0;
  std::map<std::string, std::set<int64_t>> budgets;  // per compared folder
  for (const auto& entry : std::filesystem::recursive_directory_iterator(root)) {
    if (entry.path().extension() != ".toml") continue;
    ++n;
    SCOPED_TRACE(entry.path().string());
    // An eval config (an [eval] table: examples/soups/eval.toml) loads as one, its model path set.
    Json raw = read_toml_file(entry.path());
    if (raw.contains("eval")) {
      raw["model"]["path"] = "/m";
      EXPECT_NO_THROW(eval_config_from_json(raw, entry.path().string()))
          << test::error_of([&] { eval_config_from_json(raw, entry.path().string()); });
      continue;
    }
    // A `rlf serve --learn` config (a [learn] table: examples/serve_learn).
    if (raw.contains("learn")) {
      EXPECT_NO_THROW(learn_options_from_file(entry.path())) << test::error_of([&] { learn_options_from_file(entry.path()); });
      continue;
    }
    TrainConfig c;
    EXPECT_NO_THROW(c = load_train_config(entry.path(), {})) << test::error_of([&] { load_train_config(entry.path(), {}); });
    const auto folder = entry.path().parent_path();
    const std::string rel = std::filesystem::relative(folder, root).string();
    // The folders compared by `rlf compare`: each feedback task's (examples/feedback/<task>), and the recipes with a token budget (the curation recipes run by steps).
    if (rel.find("feedback") != std::string::npos || (rel == "recipes" && c.run.rollout_token_budget > 0))
      budgets[rel].insert(c.run.rollout_token_budget);
  }
  EXPECT_GE(n, 22);
  for (const char* folder : {"feedback/addition", "feedback/columns", "feedback/carry", "feedback/keywords", "recipes"}) {
    EXPECT_EQ(budgets[folder].size(), 1u) << "examples/" << folder << "/*.toml must share run.rollout_token_budget";
    if (!budgets[folder].empty()) {
      EXPECT_GT(*budgets[folder].begin(), 0);
    }
  }
  for (const char* folder : {"feedback/addition", "feedback/columns", "feedback/carry", "feedback/keywords"})
    EXPECT_TRUE(std::filesystem::exists(root / folder / "grpo.toml")) << folder << ": the scalar baseline";
}

}  // namespace
}  // namespace rlf

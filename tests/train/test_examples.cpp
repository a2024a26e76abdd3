// Every shipped example config loads and validates (no key typo, no value
// out of range, no combination a run would refuse), and the feedback
// comparison's configs share one rollout-token budget, as `rlf compare`
// requires.
#include <gtest/gtest.h>

#include <filesystem>
#include <set>

#include "tests/support/test_env.h"
#include "eval/eval_config.h"
#include "train/toml_config.h"
#include "train/train_config.h"

namespace rlf {
namespace {

TEST(Examples, EveryShippedConfigLoads) {
  const std::filesystem::path root = test::source_path("examples");
  int64_t n = 0;
  std::set<int64_t> budgets;
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
    TrainConfig c;
    EXPECT_NO_THROW(c = load_train_config(entry.path(), {})) << test::error_of([&] { load_train_config(entry.path(), {}); });
    if (entry.path().parent_path().filename() == "feedback" && entry.path().parent_path().parent_path() == root)
      budgets.insert(c.run.rollout_token_budget);
  }
  EXPECT_GE(n, 14);
  EXPECT_EQ(budgets.size(), 1u) << "examples/feedback/*.toml must share run.rollout_token_budget";
  EXPECT_GT(*budgets.begin(), 0);
}

}  // namespace
}  // namespace rlf

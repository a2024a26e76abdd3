// The calculator example as a user runs it: `rlf train
// examples/calculator/train.toml --json`. The policy must learn to call the
// calculator tool (a multi-turn environment) to answer multiplications it
// cannot do in its head: held-out greedy pass@1 must rise by at least 20
// points and episodes must end up taking the tool's two turns. The control
// (run.sft_control, measured for the README) is switched off here to keep CI
// short; tests/apps/test_demo.cpp covers the control. The run is seeded; wall
// time is reported, never asserted.
#include <gtest/gtest.h>

#include "tests/apps/example_run.h"
#include "tests/support/test_env.h"
#include "util/fs.h"
#include "util/json_util.h"

namespace rlf {
namespace {

TEST(CalculatorExample, LearnsToCallTheTool) {
  test::TempDir dir;
  Json s = test::train_example("examples/calculator/train.toml",
                               " --set run.sft_control=false --set run.out_dir=" + test::shell_quote((dir / "calc").string()),
                               "calculator");
  ASSERT_TRUE(s.is_object());
  for (const char* k : {"pass1_before", "pass1_after", "turns_mean", "steps_wall_s"})
    ASSERT_TRUE(s.contains(k) && s[k].is_number()) << k;
  const double before = s["pass1_before"].get<double>(), after = s["pass1_after"].get<double>();
  EXPECT_GE(after - before, 0.20) << "before " << before << ", after " << after;
  EXPECT_GT(s["turns_mean"].get<double>(), 1.5) << "the episodes should call the tool (two turns)";
  EXPECT_GT(s["last_metrics"]["env/tool_calls"].get<double>(), 0.0);
}

}  // namespace
}  // namespace rlf

// The README's main job, as a user runs it: `rlf demo --json` builds its own
// task, policy and tokenizer, warms the policy by SFT, trains it with GRPO and
// must raise held-out greedy pass@1 by at least 25 points, and reports the
// control (the same SFT policy trained by SFT alone for RL's wall time). The run is seeded
// and deterministic for a given thread count, so this checks an outcome, not a
// timing (wall_s is reported, never asserted). ~4 minutes on 2 cores.
#include <gtest/gtest.h>

#include <iostream>

#include "tests/support/test_env.h"
#include "util/fs.h"
#include "util/json_util.h"

namespace rlf {
namespace {

TEST(Demo, RaisesHeldOutPass1ByAtLeast25Points) {
  test::TempDir dir;
  auto r = test::run_command(test::shell_quote(test::binary_path("apps/cli/rlf").string()) + " demo --json --out " +
                             test::shell_quote((dir / "demo").string()));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  auto lines = split_lines(r.output);
  ASSERT_FALSE(lines.empty());
  Json s = Json::parse(lines.back());
  std::cout << "rlf demo: " << s.dump() << "\n";
  for (const char* k : {"pass1_before", "pass1_after", "pass1_control", "control_sft_steps", "wall_s", "steps"})
    ASSERT_TRUE(s.contains(k)) << k;
  const double before = s["pass1_before"].get<double>(), after = s["pass1_after"].get<double>();
  EXPECT_GT(before, 0.05) << "the SFT warm start should leave the policy weak but not hopeless";
  EXPECT_GE(after - before, 0.25) << "before " << before << ", after " << after;
  // The control (SFT alone for the RL phase's wall time) is reported, not asserted: it is the comparison.
  EXPECT_GE(s["pass1_control"].get<double>(), 0.0);
  EXPECT_GT(s["control_sft_steps"].get<int64_t>(), 0);
  EXPECT_TRUE(std::filesystem::exists(dir / "demo/plot.html"));
}

}  // namespace
}  // namespace rlf

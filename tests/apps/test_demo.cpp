// The README's main job, as a user runs it: `rlf demo --json` builds its own
// task, policy and tokenizer, warms the policy by SFT on a sloppy teacher's
// demonstrations (the carry forgotten on 70% of showings), trains it with
// GRPO, and reports held-out greedy pass@1 before RL, after RL, and for the
// control (the same SFT policy trained by SFT alone for RL's wall time).
//
// What is asserted holds with a wide margin on every seed measured, not on
// one seed's rounding: over seeds 0-6 (2026-11-27, Intel Xeon Sapphire
// Rapids; docs/benchmarks.md, "rlf demo", per seed) RL ended 43.5-48.5
// points above the control and 39.0-48.5 above the warm start, at 98.5-100%
// held-out pass@1 from 51.5-60.5%; a seed changes the run far more than
// another CPU's rounding does (that changes a few last bits of a sum, a seed
// every weight and sample). The gates are about half of the smallest margin
// measured: RL ahead of the control by >= 20 points and of the warm start by
// >= 20. The control's own figure is reported, not asserted beyond that
// comparison. Wall time is reported, never asserted (209 s on one thread in
// a clean-clone CI run).
#include <gtest/gtest.h>

#include <iostream>

#include "tests/support/test_env.h"
#include "util/fs.h"
#include "util/json_util.h"

namespace rlf {
namespace {

TEST(Demo, RlBeatsTheSftOnlyControlByAClearMargin) {
  test::TempDir dir;
  auto r = test::run_command(test::shell_quote(test::binary_path("apps/cli/rlf").string()) + " demo --json --threads 1 --out " +
                             test::shell_quote((dir / "demo").string()));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  auto lines = split_lines(r.output);
  ASSERT_FALSE(lines.empty());
  Json s = Json::parse(lines.back());
  Json shown = s;
  shown.erase("last_metrics");
  std::cout << "rlf demo: " << shown.dump() << "\n";
  for (const char* k : {"pass1_before", "pass1_after", "pass1_control", "control_sft_steps", "wall_s", "steps", "verdict"})
    ASSERT_TRUE(s.contains(k)) << k;
  const double before = s["pass1_before"].get<double>(), after = s["pass1_after"].get<double>();
  const double control = s["pass1_control"].get<double>();
  EXPECT_GT(before, 0.05) << "the SFT warm start should leave the policy weak but not hopeless";
  EXPECT_GE(after - before, 0.20) << "before " << before << ", after " << after;
  EXPECT_GE(after - control, 0.20) << "after " << after << ", control " << control;
  EXPECT_GT(s["control_sft_steps"].get<int64_t>(), 0);
  EXPECT_EQ(s["verdict"].get<std::string>().rfind("RL beats imitation by +", 0), 0u) << s["verdict"];
  EXPECT_EQ(s["demonstrations"], "carry_dropping");
  EXPECT_TRUE(std::filesystem::exists(dir / "demo/plot.html"));
}

}  // namespace
}  // namespace rlf

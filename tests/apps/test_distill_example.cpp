// The on-policy distillation example as a user runs it (examples/distill):
// `rlf train teacher.toml`, then `rlf train train.toml` pointing
// distill.teacher_path at it, on shrunken budgets (--set) so the test fits
// CI. The student (SFT on sloppy demonstrations) must move towards the
// teacher (SFT on clean ones): its held-out per-token KL(student || teacher)
// on its own samples must fall and its held-out greedy pass@1 must rise.
// Wall time is reported, never asserted.
//
// DISABLED until measured: the budgets and gates below are a first guess,
// not yet run (the helper that wrote this ran out of CPU on the shared
// machine). To enable: run it over seeds 0-2 (--set run.seed=N for both
// commands), record per seed in docs/benchmarks.md "On-policy distillation
// from a teacher model" with the CPU, set the gates to about half the
// smallest gain, check it takes <= 90 s on 2 cores, and drop DISABLED_.
#include <gtest/gtest.h>

#include "tests/apps/example_run.h"
#include "tests/support/test_env.h"
#include "util/fs.h"
#include "util/json_util.h"

namespace rlf {
namespace {

// The budgets of this test (the example's, shrunk).
const char* const kTeacherSets = " --set run.steps=500";
const char* const kStudentSets =
    " --set sft.steps=150 --set run.rollout_token_budget=40000 --set data.eval_size=100";

TEST(DistillExample, DISABLED_StudentMovesTowardsTheTeacher) {
  test::TempDir dir;
  const std::string teacher_out = (dir / "teacher").string();
  Json t = test::train_example("examples/distill/teacher.toml",
                               std::string(kTeacherSets) + " --set data.eval_size=100 --set run.out_dir=" +
                                   test::shell_quote(teacher_out),
                               "teacher");
  ASSERT_TRUE(t.is_object());
  const std::string teacher_model = t["final_model"].get<std::string>();
  Json s = test::train_example("examples/distill/train.toml",
                               std::string(kStudentSets) + " --set distill.teacher_path=" +
                                   test::shell_quote(teacher_model) + " --set run.eval_kl_model=" +
                                   test::shell_quote(teacher_model) + " --set run.out_dir=" +
                                   test::shell_quote((dir / "student").string()),
                               "student");
  ASSERT_TRUE(s.is_object());
  const double kl_before = s["kl_to_model_before"].get<double>(), kl_after = s["kl_to_model_after"].get<double>();
  const double before = s["pass1_before"].get<double>(), after = s["pass1_after"].get<double>();
  EXPECT_LT(kl_after, 0.7 * kl_before) << "held-out KL(student || teacher) " << kl_before << " -> " << kl_after;
  EXPECT_GE(after - before, 0.10) << "pass@1 " << before << " -> " << after << " (teacher "
                                  << t["pass1_after"].get<double>() << ")";
  const Json& m = s["last_metrics"];
  for (const char* k : {"distill/kl", "distill/teacher_tail", "distill/student_tail", "loss/distill"})
    EXPECT_TRUE(m.contains(k) && m[k].is_number()) << k;
}

}  // namespace
}  // namespace rlf

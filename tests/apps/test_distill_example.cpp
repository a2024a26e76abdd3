// The on-policy distillation example as a user runs it (examples/distill):
// `rlf train teacher.toml`, then `rlf train train.toml` pointing
// distill.teacher_path at it, on shrunken budgets (--set) so the test fits
// CI. The student (SFT on sloppy demonstrations) must move towards the
// teacher (SFT on clean ones): its held-out per-token KL(student || teacher)
// on its own samples must fall and its held-out greedy pass@1 must rise.
// Wall time is reported, never asserted.
//
// Measured at these budgets (docs/benchmarks.md, "On-policy distillation",
// 2026-11-27, Intel Xeon Sapphire Rapids, one thread; the teacher seeded
// 100 + S, the student S): for S = 0, 1, 2 the teacher reached 91%, 100%,
// 96%; the student's held-out pass@1 went 55% -> 78%, 52% -> 89%,
// 54% -> 78% and its KL to the teacher 0.540 -> 0.110, 0.313 -> 0.119,
// 0.428 -> 0.172 (it fell by 60-80%). On another Sapphire Rapids Xeon
// (2026-11-28, no AMX flags) the same run's rounding gave a different warm
// start and 53% -> 62%, KL 0.436 -> 0.197 (-55%): a CPU's rounding moves this
// short run about as much as a seed does. The gates: KL down by >= 30% (what
// distillation does, half the smallest fall measured) and pass@1 up by >= 5
// points. About 2.5 minutes on one core.
#include <gtest/gtest.h>

#include "tests/apps/example_run.h"
#include "tests/support/test_env.h"
#include "util/fs.h"
#include "util/json_util.h"

namespace rlf {
namespace {

// The budgets of this test (the example's, shrunk).
const char* const kTeacherSets = " --threads 1 --set run.steps=500";
const char* const kStudentSets =
    " --threads 1 --set sft.steps=300 --set run.steps=30 --set data.eval_size=100";

TEST(DistillExample, StudentMovesTowardsTheTeacher) {
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
  EXPECT_GE(after - before, 0.05) << "pass@1 " << before << " -> " << after << " (teacher "
                                  << t["pass1_after"].get<double>() << ")";
  const Json& m = s["last_metrics"];
  for (const char* k : {"distill/kl", "distill/teacher_tail", "distill/student_tail", "loss/distill"})
    EXPECT_TRUE(m.contains(k) && m[k].is_number()) << k;
}

}  // namespace
}  // namespace rlf

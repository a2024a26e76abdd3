// Learning-rate schedules against values worked out by hand, and option
// errors with their exact text.
#include <gtest/gtest.h>

#include "train/lr_schedule.h"
#include "util/error.h"

namespace rlf {
namespace {

LrScheduleOptions opts(LrScheduleKind kind, double lr, double lr_min, int64_t warmup, int64_t total) {
  LrScheduleOptions o;
  o.kind = kind;
  o.lr = lr;
  o.lr_min = lr_min;
  o.warmup_steps = warmup;
  o.total_steps = total;
  return o;
}

TEST(LrSchedule, ConstantWithWarmup) {
  LrSchedule s(opts(LrScheduleKind::Constant, 1.0, 0.0, 4, 0));
  EXPECT_DOUBLE_EQ(s.lr(0), 0.25);
  EXPECT_DOUBLE_EQ(s.lr(1), 0.5);
  EXPECT_DOUBLE_EQ(s.lr(3), 1.0);
  EXPECT_DOUBLE_EQ(s.lr(4), 1.0);
  EXPECT_DOUBLE_EQ(s.lr(1000000), 1.0);
  LrSchedule flat(opts(LrScheduleKind::Constant, 3e-6, 0.0, 0, 0));
  EXPECT_DOUBLE_EQ(flat.lr(0), 3e-6);
}

TEST(LrSchedule, LinearDecay) {
  // W = 2, N = 10: warm-up 0.5, 1; decay p = (s - 2) / 8.
  LrSchedule s(opts(LrScheduleKind::Linear, 1.0, 0.0, 2, 10));
  EXPECT_DOUBLE_EQ(s.lr(0), 0.5);
  EXPECT_DOUBLE_EQ(s.lr(1), 1.0);
  EXPECT_DOUBLE_EQ(s.lr(2), 1.0);
  EXPECT_DOUBLE_EQ(s.lr(6), 0.5);
  EXPECT_DOUBLE_EQ(s.lr(9), 0.125);
  EXPECT_DOUBLE_EQ(s.lr(10), 0.0);
  EXPECT_DOUBLE_EQ(s.lr(50), 0.0);
  LrSchedule m(opts(LrScheduleKind::Linear, 1.0, 0.2, 0, 4));
  EXPECT_DOUBLE_EQ(m.lr(0), 1.0);
  EXPECT_DOUBLE_EQ(m.lr(2), 0.6);
  EXPECT_DOUBLE_EQ(m.lr(4), 0.2);
}

TEST(LrSchedule, CosineDecay) {
  LrSchedule s(opts(LrScheduleKind::Cosine, 1e-3, 1e-4, 0, 100));
  EXPECT_DOUBLE_EQ(s.lr(0), 1e-3);
  EXPECT_NEAR(s.lr(25), 8.681980515339464e-4, 1e-15);  // 1e-4 + 9e-4 · (1 + cos(π/4)) / 2
  EXPECT_NEAR(s.lr(50), 5.5e-4, 1e-15);
  EXPECT_NEAR(s.lr(75), 1.318019484660536e-4 + 1e-4, 1e-15);  // 1e-4 + 9e-4 · (1 − cos(π/4)) / 2
  EXPECT_DOUBLE_EQ(s.lr(100), 1e-4);
  LrSchedule w(opts(LrScheduleKind::Cosine, 2.0, 0.0, 10, 20));
  EXPECT_DOUBLE_EQ(w.lr(4), 1.0);  // warm-up: 2 · 5/10
  EXPECT_DOUBLE_EQ(w.lr(10), 2.0);
  EXPECT_NEAR(w.lr(15), 1.0, 1e-15);
}

std::string error_of(const LrScheduleOptions& o) {
  try {
    validate(o);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(LrSchedule, ErrorsNameTheField) {
  EXPECT_EQ(error_of(opts(LrScheduleKind::Constant, 0.0, 0, 0, 0)), "optim.lr = 0: must be a finite number > 0");
  EXPECT_EQ(error_of(opts(LrScheduleKind::Constant, 1.0, 0, -1, 0)),
            "optim.warmup_steps = -1: must be >= 0 (0 = no warm-up)");
  EXPECT_EQ(error_of(opts(LrScheduleKind::Cosine, 1.0, 2.0, 0, 10)), "optim.lr_min = 2: must be in [0, lr = 1]");
  EXPECT_EQ(error_of(opts(LrScheduleKind::Linear, 1.0, 0.0, 0, 0)),
            "optim.schedule = \"linear\" needs the run's number of optimiser steps (total_steps = 0; set run.steps)");
  EXPECT_EQ(error_of(opts(LrScheduleKind::Cosine, 1.0, 0.0, 11, 10)),
            "optim.warmup_steps = 11: must be <= the run's optimiser steps, 10 (run.steps x algorithm.epochs x "
            "algorithm.mini_batches)");
  EXPECT_EQ(error_of(opts(LrScheduleKind::Cosine, 1.0, 0.0, 10, 10)), "");
  EXPECT_THROW(LrSchedule(opts(LrScheduleKind::Cosine, 1.0, 0.0, 11, 10)), Error);
  EXPECT_EQ(parse_lr_schedule_kind("cosine"), LrScheduleKind::Cosine);
  try {
    parse_lr_schedule_kind("cosin");
    FAIL();
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "unknown learning-rate schedule 'cosin' (valid: constant, linear, cosine)");
  }
  LrSchedule s(opts(LrScheduleKind::Constant, 1.0, 0, 0, 0));
  EXPECT_THROW(s.lr(-1), Error);
}

}  // namespace
}  // namespace rlf

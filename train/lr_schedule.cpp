#include "train/lr_schedule.h"

#include <cmath>
#include <numbers>

#include "util/error.h"

namespace rlf {

LrScheduleKind parse_lr_schedule_kind(const std::string& name) {
  if (name == "constant") return LrScheduleKind::Constant;
  if (name == "linear") return LrScheduleKind::Linear;
  if (name == "cosine") return LrScheduleKind::Cosine;
  fail("unknown learning-rate schedule '", name, "' (valid: constant, linear, cosine)");
}

std::vector<std::string> lr_schedule_kind_names() {
  std::vector<std::string> out;
  for (auto kind : {LrScheduleKind::Constant, LrScheduleKind::Linear, LrScheduleKind::Cosine})
    out.push_back(lr_schedule_kind_name(kind));
  return out;
}

std::string lr_schedule_kind_name(LrScheduleKind kind) {
  switch (kind) {
    case LrScheduleKind::Constant: return "constant";
    case LrScheduleKind::Linear: return "linear";
    case LrScheduleKind::Cosine: return "cosine";
  }
  return "?";
}

void validate(const LrScheduleOptions& o) {
  check(std::isfinite(o.lr) && o.lr > 0.0, "optim.lr = ", o.lr, ": must be a finite number > 0");
  check(o.warmup_steps >= 0, "optim.warmup_steps = ", o.warmup_steps, ": must be >= 0 (0 = no warm-up)");
  check(o.total_steps >= 0, "the schedule's total_steps = ", o.total_steps, ": must be >= 0");
  if (o.kind == LrScheduleKind::Constant) return;
  const std::string kind = lr_schedule_kind_name(o.kind);
  check(std::isfinite(o.lr_min) && o.lr_min >= 0.0 && o.lr_min <= o.lr, "optim.lr_min = ", o.lr_min,
        ": must be in [0, lr = ", o.lr, "]");
  check(o.total_steps > 0, "optim.schedule = \"", kind,
        "\" needs the run's number of optimiser steps (total_steps = 0; set run.steps)");
  check(o.warmup_steps <= o.total_steps, "optim.warmup_steps = ", o.warmup_steps,
        ": must be <= the run's optimiser steps, ", o.total_steps,
        " (run.steps x algorithm.epochs x algorithm.mini_batches)");
}

LrSchedule::LrSchedule(const LrScheduleOptions& options) : options_(options) { validate(options_); }

double LrSchedule::lr(int64_t step) const {
  check(step >= 0, "lr_schedule: step ", step, " is negative");
  const auto& o = options_;
  if (step < o.warmup_steps) return o.lr * static_cast<double>(step + 1) / static_cast<double>(o.warmup_steps);
  if (o.kind == LrScheduleKind::Constant) return o.lr;
  if (step >= o.total_steps) return o.lr_min;
  const double p = static_cast<double>(step - o.warmup_steps) / static_cast<double>(o.total_steps - o.warmup_steps);
  const double shape = o.kind == LrScheduleKind::Linear ? 1.0 - p : 0.5 * (1.0 + std::cos(std::numbers::pi * p));
  return o.lr_min + (o.lr - o.lr_min) * shape;
}

}  // namespace rlf

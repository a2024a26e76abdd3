// Learning-rate schedules: constant, linear decay, cosine decay, each after a
// linear warm-up. A schedule is a pure function of the optimiser step.
//
// Steps are 0-based: lr(s) is the rate of the (s+1)-th optimiser step.
//   warm-up   s < W:       lr_peak · (s + 1) / W        (the first step is not wasted at 0)
//   decay     W ≤ s < N:   p = (s − W) / (N − W)         (N = total_steps)
//             constant:    lr_peak
//             linear:      lr_min + (lr_peak − lr_min) · (1 − p)
//             cosine:      lr_min + (lr_peak − lr_min) · (1 + cos(π p)) / 2
//   after     s ≥ N:       lr_min (linear/cosine), lr_peak (constant)
// As Hugging Face's get_{linear,cosine}_schedule_with_warmup in the decay
// phase; the warm-up starts at lr_peak/W instead of 0.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace rlf {

enum class LrScheduleKind { Constant, Linear, Cosine };

// "constant" | "linear" | "cosine"; errors list the valid names.
LrScheduleKind parse_lr_schedule_kind(const std::string& name);
std::string lr_schedule_kind_name(LrScheduleKind kind);
std::vector<std::string> lr_schedule_kind_names();  // "constant", "linear", "cosine"

struct LrScheduleOptions {
  LrScheduleKind kind = LrScheduleKind::Constant;  // shape after the warm-up
  double lr = 1e-6;             // peak learning rate (reached at the end of the warm-up)
  double lr_min = 0.0;          // final rate of linear/cosine decay; ignored by constant
  int64_t warmup_steps = 0;     // W: optimiser steps of linear warm-up; 0 = none
  int64_t total_steps = 0;      // N: optimiser steps of the run; required (> 0) for linear/cosine
};

// Errors name the field and the fix, e.g. "lr_schedule.lr_min = 2: must be in [0, lr = 1]".
void validate(const LrScheduleOptions& options);

class LrSchedule {
 public:
  explicit LrSchedule(const LrScheduleOptions& options);  // validates
  // Learning rate of 0-based optimiser step `step` (>= 0).
  double lr(int64_t step) const;
  const LrScheduleOptions& options() const { return options_; }

 private:
  LrScheduleOptions options_;
};

}  // namespace rlf

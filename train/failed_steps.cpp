#include "train/failed_steps.h"

#include "util/error.h"

namespace rlf {

FailedStepWatch::FailedStepWatch(int64_t max_failed_steps) : max_(max_failed_steps) {
  check(max_failed_steps >= 0, "run.max_failed_steps must be >= 0 (got ", max_failed_steps, ")");
}

std::optional<std::string> FailedStepWatch::add(int64_t step, const Json& metrics) {
  const double n = metrics.value("episode/count", 0.0), errors = metrics.value("env/errors", 0.0);
  if (!(n > 0 && errors >= n)) {
    in_a_row_ = 0;
    first_error_.clear();
    return std::nullopt;
  }
  ++in_a_row_;
  if (first_error_.empty() && metrics.contains("notes") && metrics["notes"].is_array())
    for (const Json& note : metrics["notes"])
      if (note.is_string() && note.get<std::string>().rfind("environment error", 0) == 0) {
        first_error_ = note.get<std::string>();
        break;
      }
  if (max_ == 0 || in_a_row_ < max_) return std::nullopt;
  return str("every episode failed in ", in_a_row_, " steps in a row (steps ", step - in_a_row_ + 1, " to ", step, ", ",
       static_cast<int64_t>(n), " episodes in the last): ", first_error_.empty() ? "see env/errors" : first_error_,
       ". Fix the environment ([env]); run.max_failed_steps = ", max_, " stops such a run (0 = never)");
}

}  // namespace rlf

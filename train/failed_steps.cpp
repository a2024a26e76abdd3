#include "train/failed_steps.h"

#include <algorithm>
#include <utility>

#include "util/error.h"

namespace rlf {

FailedStepWatch::FailedStepWatch(int64_t max_failed_steps) : max_(max_failed_steps) {
  check(max_failed_steps >= 0, "run.max_failed_steps must be >= 0 (got ", max_failed_steps, ")");
}

std::optional<std::string> FailedStepWatch::add(int64_t step, const Json& metrics, const std::vector<Episode>& episodes) {
  const double n = metrics.value("episode/count", 0.0), n_errors = metrics.value("env/errors", 0.0);
  if (!(n > 0 && n_errors >= n)) {
    in_a_row_ = 0;
    errors_.clear();
    return std::nullopt;
  }
  ++in_a_row_;
  for (const Episode& e : episodes)
    if (!e.env_error.empty()) ++errors_[e.env_error];
  if (max_ == 0 || in_a_row_ < max_) return std::nullopt;
  std::vector<std::pair<int64_t, std::string>> by_count;
  for (const auto& [text, count] : errors_) by_count.emplace_back(-count, text);
  std::sort(by_count.begin(), by_count.end());
  std::string errors;
  for (size_t k = 0; k < by_count.size() && k < 3; ++k)
    errors += str(k ? "; " : "", "'", by_count[k].second, "' (", -by_count[k].first,
                  by_count[k].first == -1 ? " episode)" : " episodes)");
  return str("every episode failed in ", in_a_row_, " steps in a row (steps ", step - in_a_row_ + 1, " to ", step, ", ",
             static_cast<int64_t>(n), " episodes in the last) with an environment error: ",
             errors.empty() ? "see env/errors" : errors, ". Fix the environment ([env]); run.max_failed_steps = ", max_,
             " stops such a run (0 = never)");
}

}  // namespace rlf

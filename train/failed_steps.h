// A run whose every episode fails stops. An environment that cannot start
// (a missing env.working_dir, an agent program that exits at once, an
// external environment that crashes) ends each episode with an error; each
// such episode has no reward and teaches nothing, so a run where all of them
// fail would otherwise spend every step and exit 0 — silently under --quiet.
//
// FailedStepWatch reads each RL step's metrics: a step fails when it had
// episodes and every one ended with an environment error (env/errors ==
// episode/count, both summed over the ranks, so every rank decides alike).
// After `max_failed_steps` failing steps in a row it says the run must stop,
// with the steps, the count and the stretch's errors (the three most
// frequent, with their counts). A step with one working
// episode resets the count.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "env/episode.h"
#include "util/json_util.h"

namespace rlf {

class FailedStepWatch {
 public:
  // `max_failed_steps` (run.max_failed_steps): failing steps in a row that stop the run; 0 = never stop.
  explicit FailedStepWatch(int64_t max_failed_steps);

  // A step's metrics (env/errors, episode/count) and this process's episodes
  // of it (for their env_error); `step` is 1-based. On the max_failed_steps-th
  // failing step in a row: the error to stop the run with.
  std::optional<std::string> add(int64_t step, const Json& metrics, const std::vector<Episode>& episodes);

  int64_t n_failing_in_a_row() const { return in_a_row_; }

 private:
  int64_t max_;
  int64_t in_a_row_ = 0;
  std::map<std::string, int64_t> errors_;  // this process's environment errors in the failing stretch, counted
};

}  // namespace rlf

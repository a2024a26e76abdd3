// A whole training run, as `rlf train` and `rlf demo` perform it:
//   load the policy, data and rewards (every record checked by every reward
//   before any step) -> optional SFT warm start -> held-out pass@1 before ->
//   RL steps (metrics.jsonl, samples.jsonl, progress bar, periodic atomic
//   checkpoints, resume) -> pass@1 after -> final checkpoint, plot.html,
//   summary.json and an end-of-run table.
#pragma once

#include <filesystem>

#include "train/train_config.h"
#include "util/json_util.h"

namespace rlf {

struct TrainRunOptions {
  bool resume = false;   // continue from the newest checkpoint in out_dir/checkpoints
  bool quiet = false;    // no progress bar or table (tests)
};

struct TrainRunSummary {
  int64_t steps = 0;            // RL steps completed (in total, across resumes)
  int64_t sft_steps = 0;        // SFT steps run by this process
  double wall_s = 0;            // this process
  double pass1_before = -1;     // greedy pass@1 on the eval split before RL (-1: no eval split)
  double pass1_after = -1;      // ... after RL
  std::filesystem::path out_dir;
  Json last_metrics;            // the last step's metrics
  Json to_json() const;
};

TrainRunSummary run_training(const TrainConfig& config, const TrainRunOptions& options = {});

}  // namespace rlf

// Comparing methods on the same task, seeds and rollout-token budget
// (`rlf compare CONFIG... --seeds N`): every config runs once per seed
// (run.seed = 0..N-1, each in out_dir/<config stem>/seed-<s>), and the table
// reports per config the mean and sample standard deviation over seeds of
// the final held-out greedy pass@1, its change from before RL, the steps and
// the rollout tokens used.
//
// The same budget: every config must end up with the same
// run.rollout_token_budget (set it in the files or with --set for all);
// configs that differ are refused, since a method given more tokens is not
// compared, it is favoured. The SFT warm start of a seed is trained once and
// loaded by every config that has the same [model], [data] and [sft]
// (run.warm_start_cache = out_dir/warm_start). Runs that exist already (summary.json of a
// finished run with the same config) are read, not run again, so an
// interrupted comparison continues where it stopped.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "train/train_run.h"
#include "util/json_util.h"

namespace rlf {

struct CompareOptions {
  int64_t seeds = 3;                        // runs per config (run.seed = 0..seeds-1)
  std::vector<std::string> overrides;       // --set KEY=VALUE for every config
  std::filesystem::path out_dir = "runs/compare";
  bool quiet = false;                       // no per-run lines
  EnvLookup read_env;                       // for critics that read an API key

  void validate() const;
};

struct CompareRun {
  int64_t seed = 0;
  double pass1_before = -1, pass1_after = -1;
  int64_t steps = 0, rollout_tokens = 0;
  double wall_s = 0;                        // the whole run (warm start, evaluations, RL)
  double rl_s = 0;                          // its RL steps (rollouts, feedback, updates)
  bool reused = false;                      // read from an earlier finished run
};

struct CompareEntry {
  std::string config;                       // the path as given
  std::string name;                         // its stem (the run directory's name)
  std::vector<CompareRun> runs;
  double pass1_after_mean = 0, pass1_after_std = 0;   // over seeds (sample std; 0 for one seed)
  double gain_mean = 0, gain_std = 0;                 // pass1_after - pass1_before
  double rollout_tokens_mean = 0;
  double rl_s_mean = 0;                     // the same token budget can cost different time: reported too
};

struct CompareResult {
  int64_t seeds = 0;
  int64_t rollout_token_budget = 0;
  std::vector<CompareEntry> entries;
  Json to_json() const;
  std::string table() const;                // a Markdown table
};

CompareResult compare_configs(const std::vector<std::filesystem::path>& configs, const CompareOptions& options);

}  // namespace rlf

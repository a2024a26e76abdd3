// Comparing methods on the same task, seeds and rollout-token budget
// (`rlf compare CONFIG... --seeds N`): every config runs once per seed
// (run.seed = 0..N-1, each in out_dir/<config stem>/seed-<s>), and the table
// reports per config the mean, sample standard deviation and standard error
// over seeds of the final held-out greedy pass@1, each seed's value, its
// change from before RL, the steps and the rollout tokens used; and, against
// the FIRST config (the baseline: grpo.toml sorts first in the example
// folders), the paired difference seed by seed (mean ± standard error, and
// on how many seeds it is ahead). A config with run.sft_control adds the row
// "SFT alone": the warm start trained by SFT for RL's wall time.
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
  double pass1_control = -1;                // run.sft_control: SFT alone for rl_s (-1: none)
  bool reused = false;                      // read from an earlier finished run
};

// Mean, sample standard deviation and standard error (sd / sqrt(n)) of `v`; 0 for what one value cannot give.
struct MeanSe {
  double mean = 0, sd = 0, se = 0;
  int64_t n = 0;
};
MeanSe mean_se(const std::vector<double>& v);

struct CompareEntry {
  std::string config;                       // the path as given
  std::string name;                         // its stem (the run directory's name)
  std::vector<CompareRun> runs;
  double pass1_after_mean = 0, pass1_after_std = 0;   // over seeds (sample std; 0 for one seed)
  double pass1_after_se = 0;                          // its standard error (std / sqrt(seeds))
  // Paired against the first config, seed by seed (0 / 0 / 0 for the first itself).
  double vs_first_mean = 0, vs_first_se = 0;
  int64_t vs_first_ahead = 0;                         // seeds where this config's pass@1 is higher
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

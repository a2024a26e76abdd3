// A whole training run, as `rlf train` and `rlf demo` perform it, for every
// kind of run ([trainer] kind, train/train_config.h):
//
//   1. load        the policy (or write a random one, model.random_init),
//                  data, rewards and environment; every record checked by
//                  every reward and the environment, and every prompt against
//                  the context, before any step
//   2. warm start  optional SFT (grpo runs with [sft], fresh runs only): the
//                  same trainer loop with the ce term alone, its own optimizer
//   3. trainer     built after the warm start, so its optimizer (and its fp32
//                  masters for bf16 models) starts from the warmed weights;
//                  the KL reference is the policy as RL starts unless
//                  algorithm.kl_reference = "initial" (saved in
//                  run.out_dir/reference so a resume uses the same one)
//   4. resume      from the newest complete checkpoint (--resume)
//   5. steps       the step source (RL: env episodes + rewards + credit; SFT:
//                  batches of pairs) -> trainer update -> metrics.jsonl,
//                  samples.jsonl, progress, periodic atomic checkpoints
//   6. finish      final checkpoint, held-out pass@1 after, the SFT control
//                  (run.sft_control), plot.html, summary.json, a table
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
  std::string kind;             // "grpo" | "sft"
  int64_t steps = 0;            // trainer steps completed (in total, across resumes)
  int64_t sft_steps = 0;        // warm-start SFT steps run by this process
  double wall_s = 0;            // this process
  double steps_wall_s = 0;      // this process's trainer steps (rollouts and updates, no evaluation)
  double pass1_before = -1;     // greedy pass@1 on the eval split before the steps (-1: no eval split)
  double pass1_after = -1;      // ... after
  double pass1_control = -1;    // run.sft_control: the post-SFT policy after SFT alone for steps_wall_s (-1: none)
  int64_t control_sft_steps = 0;  // SFT steps the control ran
  std::filesystem::path out_dir;
  Json last_metrics;            // the last step's metrics
  Json to_json() const;         // the object `rlf train --json` prints (turns_mean: the last step's)
};

TrainRunSummary run_training(const TrainConfig& config, const TrainRunOptions& options = {});

}  // namespace rlf

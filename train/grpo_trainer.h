// GrpoTrainer: the policy-gradient loop for the GRPO family, configured rather
// than copied per algorithm (GRPO, Dr.GRPO, DAPO, RLOO, REINFORCE++, GSPO are
// options of the same steps).
//
// One step:
//   1. collect    — next prompts from the cursor; the rollout engine samples
//                   group_size completions each from the shared policy
//   2. score      — every reward component scores each group; totals per
//                   sample (sum_then_normalize | normalize_then_sum)
//   3. filter     — dynamic sampling (DAPO): drop groups whose totals are all
//                   equal and refill, up to a limit
//   4. reference  — log-probs under the frozen reference (only when kl_beta > 0)
//   5. advantages — per-sample advantages (grpo, dr_grpo, batch_std, rloo,
//                   reinforce_pp), broadcast to the completion tokens
//   6. update     — epochs x mini-batches optimiser steps on the stored
//                   old log-probs; NaN/Inf steps are skipped and counted
//   7. metrics    — one JSON object per step
// The engine's KV cache is released before the update, so training reclaims it.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "algorithms/advantages.h"
#include "data/data_cursor.h"
#include "data/examples.h"
#include "rewards/reward_set.h"
#include "rollout/engine.h"
#include "rollout/policy.h"
#include "train/episode.h"
#include "train/lr_schedule.h"
#include "train/optimizer.h"
#include "train/policy_update.h"
#include "util/json_util.h"

namespace rlf {

struct GrpoOptions {
  int64_t prompts_per_step = 8;          // groups per step
  int64_t group_size = 8;                // completions per prompt (G)
  SamplingParams sampling;               // temperature, top-k/p, min-p, max_new_tokens, stops
  int64_t max_batch_rows = 64;           // sequences the engine decodes together
  RewardAggregation reward_aggregation = RewardAggregation::sum_then_normalize;
  std::string accuracy_reward;           // component whose score > 0.5 counts as correct ("" = the first)
  algo::AdvantageOptions advantage;            // estimator and std epsilon
  UpdateOptions update;                  // loss, aggregation, KL, entropy, micro-batch
  std::string kl_placement = "loss";     // "loss" (beta*k in the loss) | "reward" (-beta*sum k in the reward)
  int64_t epochs = 1;                    // optimisation passes over each rollout batch
  int64_t mini_batches = 1;              // optimiser steps per pass (the batch split by groups)
  bool dynamic_sampling = false;         // DAPO: drop zero-variance groups and refill
  int64_t dynamic_sampling_max_rounds = 4;  // rollout rounds per step at most (then train on what we have)
  OptimizerOptions optimizer;
  LrScheduleOptions lr;
  uint64_t seed = 0;                     // seeds sampling and the data order
  bool add_special_tokens = true;        // add BOS when encoding prompts (false when a chat template wrote it)

  void validate() const;
};

// A prompt's completions with their scores.
struct ScoredGroup {
  const PromptExample* example = nullptr;
  std::vector<Episode> episodes;         // G episodes (advantage set in step 5)
  GroupScores scores;                    // every component's result per sample
  std::vector<std::optional<double>> totals;  // aggregated reward per sample
};

class GrpoTrainer {
 public:
  // Borrows the policy (its model is updated in place), the training
  // examples and the rewards; `reference` is a frozen copy of the initial
  // policy, required when update.kl_beta > 0 (else may be null).
  GrpoTrainer(Policy& policy, const std::vector<PromptExample>& examples, RewardSet& rewards, GrpoOptions options,
              CausalLM reference = nullptr);

  // Runs one step (1–7) and returns its metrics.
  Json step();

  int64_t steps_done() const { return steps_done_; }
  DataCursor& cursor() { return cursor_; }
  Optimizer& optimizer() { return *optimizer_; }
  RolloutEngine& engine() { return engine_; }
  const GrpoOptions& options() const { return options_; }
  // The groups of the last step (for sample logs).
  const std::vector<ScoredGroup>& last_groups() const { return last_groups_; }
  // Restores the step counter (checkpoint resume); the cursor and optimizer restore themselves.
  void set_steps_done(int64_t steps) { steps_done_ = steps; }

 private:
  std::vector<ScoredGroup> collect_and_score(int64_t n_prompts, Json& metrics);
  void add_reference_logprobs(std::vector<ScoredGroup>& groups);
  void compute_advantages(std::vector<ScoredGroup>& groups, Json& metrics);
  Json update(std::vector<ScoredGroup>& groups);

  Policy& policy_;
  const std::vector<PromptExample>& examples_;
  RewardSet& rewards_;
  GrpoOptions options_;
  CausalLM reference_;
  RolloutEngine engine_;
  DataCursor cursor_;
  std::unique_ptr<Optimizer> optimizer_;
  int64_t steps_done_ = 0;
  uint64_t sample_seed_ = 0;
  std::vector<ScoredGroup> last_groups_;
};

}  // namespace rlf

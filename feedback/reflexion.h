// Reflexion (Shinn et al. 2023; docs/feedback.md) as an inference-only loop:
// K attempts at each task with no weight update. After a failed attempt a
// critic (by default the policy itself) writes a reflection, kept in the
// task's episodic memory (feedback/reflection_memory.h); the next attempt's
// prompt shows the task's reflections before the task. A task solved at an
// attempt is not tried again. `rlf reflexion` reports accuracy per attempt:
// the baseline that weight-updating feedback methods are measured against,
// and useful alone for models whose weights cannot be trained. With a lesson
// pool (feedback/lesson_pool.h) instead of the per-task memory, an attempt
// sees the lessons of the most similar tasks, its own included (LANPO-style).
//
// Context rule: when the attempt prompt with every reflection does not fit
// the context with max_new_tokens after it, the oldest reflections are left
// out (counted); with none left it is the task's own prompt.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "feedback/critic.h"
#include "feedback/lesson_pool.h"
#include "rewards/reward_set.h"
#include "rollout/policy.h"
#include "rollout/sampling.h"
#include "util/json_util.h"

namespace rlf {

struct ReflexionOptions {
  int64_t attempts = 3;                          // tries per task
  std::string attempt_prompt = "{memory}{prompt}";  // {memory}: the task's reflections, {prompt}: the task
  std::string memory_line = "Note from an earlier attempt: {reflection}\n";  // one per reflection
  SamplingParams sampling = [] {                 // greedy by default
    SamplingParams p;
    p.temperature = 0.0;
    return p;
  }();
  size_t accuracy_component = 0;                 // reward component deciding correctness
  RewardAggregation aggregation = RewardAggregation::sum_then_normalize;
  bool add_special_tokens = true;
  int64_t max_batch_rows = 64;
  uint64_t seed = 0;

  void validate() const;  // names the option
};

struct ReflexionAttempt {
  int64_t attempt = 0;            // 1-based
  int64_t n_tried = 0;            // tasks not solved before this attempt
  int64_t n_solved = 0;           // ... solved at it
  double accuracy = 0;            // tasks solved at this attempt or before / all tasks
  int64_t n_reflections = 0;      // reflections written after it
  int64_t n_critic_failures = 0;  // failed tasks the critic wrote nothing for
  int64_t n_memory_cut = 0;       // attempt prompts that left reflections out to fit
};

struct ReflexionResult {
  int64_t n_tasks = 0;
  std::vector<ReflexionAttempt> attempts;
  Json to_json() const;           // {"n_tasks", "attempts": [{attempt, tried, solved, accuracy, ...}]}
};

// Runs the attempts; `memory` (the task's own reflections, or a lesson pool
// shared across tasks) is read and extended (save it to keep it).
ReflexionResult run_reflexion(Policy& policy, const std::vector<PromptExample>& tasks, RewardSet& rewards,
                              Critic& critic, FeedbackMemory& memory, const ReflexionOptions& options);

}  // namespace rlf

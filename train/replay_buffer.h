// Experience replay of successes (ARPO, "Agentic Reinforced Policy
// Optimization", Dong et al. 2025; docs/feedback.md), a stage of RL steps
// after scoring (and refinement), before the dynamic-sampling filter:
//
//   store   every correct rollout episode (the accuracy reward > 0.5) of a
//           task is kept, token-exact, with its behaviour log-probs; at most
//           capacity_per_task per task (the oldest goes first), at most
//           max_tasks tasks (the task stored longest ago goes first)
//   inject  a group with no correct rollout gets up to `inject` stored
//           successes of its task, re-scored by the same rewards, as
//           off-policy episodes (EpisodeSource::Replay): the policy loss's
//           off-policy safeguards (algorithm.off_policy_ratio_cap,
//           off_policy_mask_*) apply to them, with the importance ratio
//           against their stored log-probs
//
// The buffer is saved in every checkpoint and restored on resume, so a
// resumed run continues with the same buffer. A saved buffer from another
// dataset (a task whose prompt differs) or another format version is
// refused with an error naming it.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <vector>

#include "rewards/reward_set.h"
#include "train/reducer.h"
#include "env/scored_group.h"
#include "util/json_util.h"

namespace rlf {

struct ReplayOptions {
  bool enabled = false;             // [replay] enabled
  int64_t capacity_per_task = 2;    // successes kept per task
  int64_t max_tasks = 100000;       // tasks kept at most
  int64_t inject = 1;               // stored successes given to a group with none

  void validate() const;            // names the replay.* key
};

struct ReplayStats {
  int64_t n_stored = 0;             // successes stored this step
  int64_t n_groups_without = 0;     // groups with no correct rollout
  int64_t n_hits = 0;               // ... that got a stored success
  int64_t n_injected = 0;           // episodes injected
  Json metrics(Reducer& reducer, int64_t buffer_size) const;  // "replay/*"
};

class ReplayBuffer {
 public:
  explicit ReplayBuffer(ReplayOptions options);

  // Stores the correct rollouts of `groups` and injects stored successes into
  // groups without one (scored by `rewards`, totals by `aggregation`).
  ReplayStats step(std::vector<ScoredGroup>& groups, RewardSet& rewards, RewardAggregation aggregation,
                   size_t accuracy_component, int64_t max_new_tokens, int64_t step_index);

  int64_t size() const;  // episodes stored

  // {"format": "rlf-replay", "version": 1, "tasks": [...]} with, per task,
  // its id, a hash of its prompt and its episodes.
  Json to_json() const;
  // Replaces the buffer; `prompts` maps task id -> prompt of the run's
  // dataset (PromptExample::prompt). Throws rlf::Error naming `where` for another format or version,
  // or a task that is not in the dataset or has another prompt.
  void restore(const Json& saved, const std::map<std::string, std::string>& prompts, const std::string& where);

 private:
  struct Stored {
    Episode episode;
    int64_t step = 0;  // the step that stored it
  };
  struct Task {
    std::string prompt_hash;
    std::deque<Stored> episodes;  // oldest first
    int64_t last_step = 0;
  };
  void evict_tasks();

  ReplayOptions options_;
  std::map<std::string, Task> tasks_;  // by task id
};

}  // namespace rlf

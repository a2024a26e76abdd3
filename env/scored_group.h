// A group of episodes (one task) with what the rewards said of each: the
// unit RL steps pass between collecting, scoring, refining and credit, and
// score_group(), the one way an episode group is scored.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "env/episode_producer.h"
#include "rewards/reward_aggregation.h"
#include "rewards/reward_set.h"

namespace rlf {

struct ScoredGroup {
  EpisodeGroup group;
  GroupScores scores;                          // every component's result per episode
  std::vector<std::optional<double>> totals;   // aggregated reward per episode
  int64_t slot = 0;                            // the group's position in its step, numbered across ranks
                                               // (Episode::group of its episodes once credit is assigned)
};

// Scores every episode of `group` with every component of `rewards` (as
// reward_group_of shows them; `max_new_tokens` is the per-turn limit length
// rewards see) and aggregates each episode's total by `aggregation`. An error
// names the group's task (its where). RL steps, refinement, replay and
// reflexion score by this.
ScoredGroup score_group(EpisodeGroup group, RewardSet& rewards, int64_t max_new_tokens, RewardAggregation aggregation);

// Episode i of the group is correct: the accuracy component scored it
// correct (is_correct, rewards/reward.h; a missing score is not correct).
// Refinement, replay, distillation and lessons all decide by this.
inline bool is_correct(const ScoredGroup& g, size_t component, size_t i) { return g.scores.correct(component, i); }

}  // namespace rlf

// A group of episodes (one task) with what the rewards said of each: the
// unit RL steps pass between collecting, scoring, refining and credit.
#pragma once

#include <optional>
#include <vector>

#include "env/episode_producer.h"
#include "rewards/reward_set.h"

namespace rlf {

struct ScoredGroup {
  EpisodeGroup group;
  GroupScores scores;                          // every component's result per episode
  std::vector<std::optional<double>> totals;   // aggregated reward per episode
  int64_t slot = 0;                            // the group's position in its step, numbered across ranks
                                               // (Episode::group of its episodes once credit is assigned)
};

// Episode i of the group is correct: the accuracy component scored it > 0.5
// (a missing score is not correct). Refinement, replay, distillation and
// lessons all decide by this.
inline bool is_correct(const ScoredGroup& g, size_t component, size_t i) {
  const auto& s = g.scores.results[component][i].score;
  return s && *s > 0.5;
}

}  // namespace rlf

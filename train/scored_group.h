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
};

}  // namespace rlf

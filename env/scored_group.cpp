#include "env/scored_group.h"

#include "env/episode_rewards.h"
#include "util/error.h"

namespace rlf {

ScoredGroup score_group(EpisodeGroup group, RewardSet& rewards, int64_t max_new_tokens, RewardAggregation aggregation) {
  ScoredGroup sg;
  sg.group = std::move(group);
  sg.scores = with_context(sg.group.task->where, [&] {
    return rewards.score(reward_group_of(sg.group, max_new_tokens));
  });
  sg.totals = sg.scores.totals(aggregation);
  return sg;
}

}  // namespace rlf

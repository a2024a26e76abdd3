// What rewards see of episodes: an episode group becomes a RewardGroup
// (rewards/reward.h) — the prompt the policy saw, the task's reference and
// record, and per episode its last policy turn, every token after the
// prompt, the transcript of a multi-turn episode and the environment's
// reward (the sum of its step rewards; missing when the environment failed).
// Per-token rewards a reward returns (RewardResult::token_rewards, one per
// token after the prompt) map back to episode positions n_prompt + j.
#pragma once

#include <cstdint>

#include "env/episode.h"
#include "env/episode_producer.h"
#include "rewards/reward.h"

namespace rlf {

RewardSample reward_sample_of(const Episode& episode);

// `max_new_tokens` is the per-turn completion limit (for length rewards).
RewardGroup reward_group_of(const EpisodeGroup& group, int64_t max_new_tokens);

}  // namespace rlf

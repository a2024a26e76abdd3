// An SFT pair as an episode, what an SFT run (or an SFT warm start) trains on
// (train/run_kind_sft.h): the prompt with loss weight 0, the response plus the
// EOS token with loss weight 1 — or, for multi-turn targets
// (SftExample::turns), each policy turn with weight 1 and each observation
// with weight 0, tokenized stretch by stretch as the rollout engine would see
// them.
#pragma once

#include <cstdint>
#include <vector>

#include "data/examples.h"
#include "env/episode.h"
#include "rollout/policy.h"

namespace rlf {

// One SFT example as an episode (group 0, on-policy, old log-probs 0).
// Throws rlf::Error when the policy has no EOS id.
Episode sft_episode(const Policy& policy, const SftExample& example, bool add_special_tokens);


}  // namespace rlf

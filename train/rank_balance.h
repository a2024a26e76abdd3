// Token-balanced updates across ranks (trainer.balance_ranks, default on).
// Each rank rolls out its share of a step's prompts, so the episodes a rank
// holds differ in length from its neighbours': padded to one global batch
// the slowest rank sets every optimiser step's pace. With balancing, the
// ranks exchange the step's trainable episodes once (one all_gather: each
// rank then holds them all) and split every mini-batch anew, whole groups
// (the group-whole terms need them together), by tokens: the largest group
// first to the rank with the fewest tokens so far (greedy
// longest-processing-time: no rank exceeds the mean by more than the
// largest group). Every rank computes the same split from the same data.
// The gradient is the same sum over the same tokens either way (to float
// rounding: each rank adds its micro-batches in another grouping).
#pragma once

#include <cstdint>
#include <vector>

#include "env/episode.h"
#include "train/reducer.h"

namespace rlf {

struct GroupLoad {
  int64_t slot = 0;    // the group's id (Episode::group, Trainer::update's slot)
  int64_t tokens = 0;  // its episodes' tokens
};

// Per group of `groups` (in its order), the rank in [0, world) that trains
// it: largest first (ties: the lower slot) to the rank with the fewest
// tokens so far (ties: the lower rank).
std::vector<int64_t> assign_groups_to_ranks(const std::vector<GroupLoad>& groups, int64_t world);

// Every rank's `local` episodes, in rank order, on every rank (one
// all_gather of each rank's episodes as CBOR: env/episode_json.h).
std::vector<Episode> gather_episodes(const std::vector<Episode>& local, Reducer& reducer);

}  // namespace rlf

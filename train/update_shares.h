// Where an update's signal comes from (docs/feedback.md "Is the mechanism
// active?"): a method that adds episodes or turns from feedback —
// refinements, replayed successes, retries after "try again" or a
// reflection — is active only if what it adds reaches the update with a
// non-zero advantage. Per episode the update receives, its signal is
//
//   mass(e) = sum_t loss_weight_t * |advantage_t|
//
// (what the policy-gradient term multiplies ∇log π by), and the metrics
// split the step's total by where it came from:
//
//   update/episodes_<source>      episodes with mass > 0, by EpisodeSource (rollout | refinement | replay)
//   update/share_<source>         their share of the total mass
//   update/share_later_turns      the share on policy tokens of turns >= 1 (second and later attempts,
//                                 reflections)
//   update/share_solved_after_feedback  the share of multi-turn episodes that were right at the end after
//                                 feedback (n_turns > 1, correct)
//
// Summed over the ranks by the reducer; all shares are 0 when the total is 0.
#pragma once

#include <vector>

#include "env/episode.h"
#include "train/reducer.h"
#include "util/json_util.h"

namespace rlf {

Json update_share_metrics(const std::vector<Episode>& episodes, Reducer& reducer);

}  // namespace rlf

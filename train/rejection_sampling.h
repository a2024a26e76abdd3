// Rejection-sampling fine-tuning (RAFT, Dong et al. 2023; ReST, Gulcehre et
// al. 2023; STaR, Zelikman et al. 2022) as a configuration of the one loop:
// each step samples rollout.group_size episodes per prompt and scores them
// (the RL step source), keeps the best or every good enough one, and trains
// the ce term on the kept episodes alone (algorithm.epochs passes = the
// "improve" steps of ReST). A step is a round; its report is the step's
// metrics: accuracy (pass@1 of the samples), diag/pass_at_group (pass@G),
// raft/kept_frac and diag/distinct_frac (diversity).
#pragma once

#include <string>
#include <vector>

#include "config/enum_names.h"
#include "env/episode.h"
#include "util/json_util.h"

namespace rlf {

// raft.keep: Best = each group's best qualifying episode (the first on ties); All = every qualifying one.
enum class RaftKeep { Best, All };
const EnumNames<RaftKeep>& raft_keep_names();  // "best", "all"

struct RaftOptions {
  bool enabled = false;            // [raft]: train the ce term on the kept episodes instead of the policy gradient
  RaftKeep keep = RaftKeep::Best;  // raft.keep
  double min_reward = 0.5;         // an episode qualifies when its reward is >= this (missing rewards never do)

  // Throws rlf::Error naming the key (raft.min_reward).
  void validate() const;
};

// The episodes to train on (rollout episodes only; refinements and replay are
// never kept), in their original order. Metrics: raft/kept (episodes kept),
// raft/kept_frac (of the rollout episodes), raft/groups_kept_frac (groups with
// at least one kept episode).
std::vector<Episode> rejection_sample(const std::vector<Episode>& episodes, const RaftOptions& options, Json& metrics);

}  // namespace rlf

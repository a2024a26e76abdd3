#include "train/rejection_sampling.h"

#include <cmath>
#include <map>

#include "util/error.h"

namespace rlf {

const EnumNames<RaftKeep>& raft_keep_names() {
  static const EnumNames<RaftKeep> names{"raft.keep", {{RaftKeep::Best, "best"}, {RaftKeep::All, "all"}}};
  return names;
}

void RaftOptions::validate() const {
  check(std::isfinite(min_reward), "raft.min_reward must be finite (got ", min_reward, ")");
}

std::vector<Episode> rejection_sample(const std::vector<Episode>& episodes, const RaftOptions& o, Json& metrics) {
  o.validate();
  std::vector<bool> keep(episodes.size(), false);
  std::map<int64_t, size_t> best;  // group -> index of its best qualifying episode
  std::map<int64_t, bool> groups;  // group -> has a kept episode
  double n_rollout = 0;
  for (size_t i = 0; i < episodes.size(); ++i) {
    const Episode& e = episodes[i];
    if (e.source != EpisodeSource::Rollout) continue;
    n_rollout += 1;
    groups.emplace(e.group, false);
    if (!e.reward || *e.reward < o.min_reward) continue;
    if (o.keep == RaftKeep::All) {
      keep[i] = true;
      continue;
    }
    auto it = best.find(e.group);
    if (it == best.end() || *e.reward > *episodes[it->second].reward) best[e.group] = i;
  }
  for (const auto& [g, i] : best) keep[i] = true;
  std::vector<Episode> out;
  for (size_t i = 0; i < episodes.size(); ++i)
    if (keep[i]) out.push_back(episodes[i]), groups[episodes[i].group] = true;
  double n_groups_kept = 0;
  for (const auto& [g, kept] : groups) n_groups_kept += kept;
  metrics["raft/kept"] = static_cast<double>(out.size());
  metrics["raft/kept_frac"] = n_rollout > 0 ? static_cast<double>(out.size()) / n_rollout : 0.0;
  metrics["raft/groups_kept_frac"] = groups.empty() ? 0.0 : n_groups_kept / static_cast<double>(groups.size());
  return out;
}

}  // namespace rlf

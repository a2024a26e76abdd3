#include "train/update_shares.h"

#include <cmath>
#include <string>

namespace rlf {

Json update_share_metrics(const std::vector<Episode>& episodes, Reducer& reducer) {
  struct {
    double total = 0, rollout = 0, refinement = 0, replay = 0;
    double n_rollout = 0, n_refinement = 0, n_replay = 0;
    double later_turns = 0, solved_after_feedback = 0;
  } s;
  for (const Episode& e : episodes) {
    if (e.advantage.size() != e.tokens.size()) continue;  // no advantage: nothing for the policy term
    double mass = 0, later = 0;
    for (const Segment& seg : e.segments) {
      if (seg.role != SegmentRole::Policy) continue;
      for (int64_t t = seg.begin; t < seg.end; ++t) {
        const double m = static_cast<double>(e.loss_weight[t]) * std::abs(static_cast<double>(e.advantage[t]));
        mass += m;
        if (seg.turn >= 1) later += m;
      }
    }
    if (!(mass > 0)) continue;
    s.total += mass;
    s.later_turns += later;
    if (e.n_turns > 1 && e.correct.value_or(false)) s.solved_after_feedback += mass;
    switch (e.source) {
      case EpisodeSource::Rollout: s.rollout += mass, s.n_rollout += 1; break;
      case EpisodeSource::Refinement: s.refinement += mass, s.n_refinement += 1; break;
      case EpisodeSource::Replay: s.replay += mass, s.n_replay += 1; break;
    }
  }
  reducer.sum_fields(s);
  const auto share = [&](double part) { return s.total > 0 ? part / s.total : 0.0; };
  Json m;
  m["update/episodes_rollout"] = s.n_rollout;
  m["update/episodes_refinement"] = s.n_refinement;
  m["update/episodes_replay"] = s.n_replay;
  m["update/share_rollout"] = share(s.rollout);
  m["update/share_refinement"] = share(s.refinement);
  m["update/share_replay"] = share(s.replay);
  m["update/share_later_turns"] = share(s.later_turns);
  m["update/share_solved_after_feedback"] = share(s.solved_after_feedback);
  return m;
}

}  // namespace rlf

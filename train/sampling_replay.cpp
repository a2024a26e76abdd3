#include "train/sampling_replay.h"

#include "util/error.h"

namespace rlf {

const EnumNames<LeverMode>& sampling_replay_mode_names() {
  static const EnumNames<LeverMode> names{
      "trainer.sampling_replay", {{LeverMode::Auto, "auto"}, {LeverMode::On, "on"}, {LeverMode::Off, "off"}}};
  return names;
}

bool sampling_replay_applies(LeverMode mode, const SamplingParams& p, int64_t vocab_size) {
  if (mode == LeverMode::Off) return false;
  const bool top_k = p.top_k > 0 && (vocab_size <= 0 || p.top_k < vocab_size);
  const bool filtered = top_k || p.top_p < 1 || p.min_p > 0;
  const bool bounded = p.top_k > 0 && p.top_k <= kMaxReplayKept;
  const bool applies = p.temperature > 0 && filtered && bounded;
  if (mode == LeverMode::On) {
    check(p.temperature > 0, "trainer.sampling_replay = \"on\" replays filtered sampling: rollout.temperature is 0 "
          "(greedy draws keep one token)");
    check(filtered, "trainer.sampling_replay = \"on\" replays filtered sampling: set rollout.top_k, rollout.top_p or "
          "rollout.min_p (or sampling_replay = \"auto\")");
    check(bounded, "trainer.sampling_replay = \"on\" records each token's kept set: rollout.top_k must bound it (1..",
          kMaxReplayKept, ", got ", p.top_k, ")");
  }
  return applies;
}

}  // namespace rlf

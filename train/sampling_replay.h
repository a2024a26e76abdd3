// Sampling-mask replay (trainer.sampling_replay): under top-k, top-p or
// min-p sampling, the rollout draws each token from the policy renormalised
// over a kept set; the trainer, by default, normalises over the whole
// vocabulary, so its log-probs and the importance ratios built on them
// measure another distribution than the one sampled. With replay the
// sampler records each draw's kept set (its ids, at no extra pass: the
// sorted draw already holds them), the episode's old log-probs are
// renormalised over it, and so are the trainer's (CausalLM::token_logprobs
// keep_ids), so rollout and trainer agree under truncated sampling as they do
// without it (DeepSeek-V3.2's "keep sampling mask"; vLLM's mask replay).
//
// Whatever the mode, RL rollouts record the per-token KL between the
// sampling distribution and the learner's over the whole vocabulary
// (rollout/sequence.h GeneratedSequence::sampler_kl): the metric
// rollout/sampler_kl.
//
//   auto  on where rollout.top_k, top_p or min_p restrict the draws at a
//         temperature above 0 and rollout.top_k (1..kMaxReplayKept) bounds
//         the kept sets; off otherwise (top-p or min-p alone can keep most of
//         the vocabulary per token: too large to record)
//   on    the same, with an error naming the keys where it cannot apply
//   off   never (the learner normalises over the whole vocabulary)
#pragma once

#include <cstdint>

#include "config/enum_names.h"
#include "model/memory_levers.h"  // LeverMode
#include "rollout/sampling.h"

namespace rlf {

// The largest rollout.top_k whose kept sets replay records.
inline constexpr int64_t kMaxReplayKept = 1024;

// "auto", "on", "off" under trainer.sampling_replay.
const EnumNames<LeverMode>& sampling_replay_mode_names();

// Whether rollouts sampled with `sampling` replay their kept sets under
// `mode`; throws rlf::Error naming trainer.sampling_replay and the rollout
// keys when `mode` is on and they do not allow it.
bool sampling_replay_applies(LeverMode mode, const SamplingParams& sampling, int64_t vocab_size = 0);

}  // namespace rlf

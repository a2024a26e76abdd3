// Per-token streams: every vector of an Episode that holds one value per
// token (or k values per token), declared once, here. Each row is used by
//   - Episode (env/episode.h): the member `std::vector<type> name`;
//   - Episode::validate: its size;
//   - the micro-batch (train/micro_batch.h): the tensor under the key
//     Stream::name, column t holding token t + 1's value (the position that
//     predicts it), and, for masked streams, its mask;
//   - make_micro_batch: the copy, its padding and its presence.
// Adding a per-token stream is adding one row; nothing else changes.
//
// RLF_TOKEN_STREAMS(X) calls X(type, name, batch, width, missing, pad, mask) per stream:
//   type     element type in the Episode: float (the micro-batch holds fp32)
//            or int32_t (the micro-batch holds int64)
//   name     Episode::name, the micro-batch key Stream::name, and in messages
//   batch    Always  every episode has it; every micro-batch has it
//            Any     may be empty; a micro-batch has it when any of its
//                    episodes has it (rows without it hold `missing`)
//            All     may be empty; a micro-batch has it when all of its episodes have it
//            Never   may be empty; not in the micro-batch (read before it, e.g. by credit assignment)
//   width    One: one value per token ([B, T] in the micro-batch); PerTokenK:
//            k values per token, k taken from the episodes ([B, T, k]; token t's at [t * k, (t + 1) * k));
//            PerTokenUpToK: the same with k per episode, the micro-batch's k the largest (an
//            episode's columns past its own k hold `pad`)
//   missing  what a row without the stream holds: Zero, NaN, Column (j at
//            [b, t, j]: the ids 0..k-1), UniformLogprob (-log k) or NoId (-1)
//   pad      what padding positions hold (same choices)
//   mask     None; Rows: a [B, T] fp32 mask, 1 on the tokens of rows that
//            have the stream; Finite: 1 where the value is finite, and the
//            value replaced by `missing` where it is not (NaN = no target)
//
// Header-only and free of torch: env/ (episodes) sits below train/.
#pragma once

#include <cstdint>

// clang-format off
#define RLF_TOKEN_STREAMS(X)                                                                                       \
  /* 0 for every token the policy did not write; 1 (or a shaped weight) for policy tokens */                      \
  X(float,   loss_weight,          Always, One,       Zero,           Zero,           None)                        \
  /* log-prob under the behaviour policy that produced the token (the rollout's, or replay storage's); with      \
     algorithm.recompute_old_logprobs the trainer's own recomputation (the rollout's kept in behaviour_logprob);  \
     meaningful where loss_weight > 0 */                                                                          \
  X(float,   old_logprob,          Always, One,       Zero,           Zero,           None)                        \
  /* the rollout's log-probs when old_logprob holds the trainer's recomputation (rollout correction,            \
     algorithms/rollout_correction.h); rows without: NaN */                                                       \
  X(float,   behaviour_logprob,    Any,    One,       NaN,            Zero,           None)                        \
  /* log-prob under the frozen reference */                                                                       \
  X(float,   ref_logprob,          All,    One,       Zero,           Zero,           None)                        \
  /* log-prob under a distillation teacher (train/distillation.h); NaN = no target (distill.guard dropped the    \
     token); mask: the finite values of the rows that have them */                                                \
  X(float,   teacher_logprob,      Any,    One,       Zero,           Zero,           Finite)                      \
  /* distill.top_k > 0: the teacher's k most likely tokens at each token's position (row t: the distribution    \
     of tokens[t]); rows without and padding: 0..k-1 */                                                           \
  X(int32_t, teacher_topk_id,      Any,    PerTokenK, Column,         Column,         None)                        \
  /* their log-probs, then the tail bucket's (k + 1 per token); rows without and padding: uniform */              \
  X(float,   teacher_topk_logprob, Any,    PerTokenK, UniformLogprob, UniformLogprob, None)                        \
  /* sampling-mask replay (trainer.sampling_replay): the kept set (ids) of the top-k/top-p/min-p draw of each  \
     token; -1 fills the rest of a row; a row of -1 (or none): the whole vocabulary. old_logprob is then the    \
     log-prob renormalised over it, and so are the trainer's */                                                    \
  X(int32_t, sampling_mask_id,     Any,    PerTokenUpToK, NoId,      NoId,           None)                        \
  /* KL(sampling distribution || the learner's) at each sampled token (GeneratedSequence::sampler_kl): the    \
     rollout/sampler_kl metric */                                                                                  \
  X(float,   sampler_kl,           Never,  One,       Zero,           Zero,           None)                        \
  /* set by credit assignment (algorithms/credit.h); 0 where loss_weight == 0 */                                  \
  X(float,   advantage,            Any,    One,       Zero,           Zero,           None)                        \
  /* per-token rewards (rewards that score tokens), 0 elsewhere; read by credit assignment */                      \
  X(float,   token_reward,         Never,  One,       Zero,           Zero,           None)                        \
  /* PPO: the critic's value of the state before the token, when scored (train/value_model.h) */                  \
  X(float,   value,                Any,    One,       Zero,           Zero,           None)                        \
  /* PPO: the GAE return the critic learns at the token (0 off policy tokens; NaN = no target) */                  \
  X(float,   value_target,         Any,    One,       Zero,           Zero,           Finite)                      \
  /* process reward model: a step's label (1 correct, 0 not) at the token after the step's last token           \
     (train/process_steps.h); NaN = no step ends there */                                                         \
  X(float,   step_label,           Any,    One,       Zero,           Zero,           Finite)                      \
  /* the optimiser step whose weights sampled the token (-1: not sampled); read by make_micro_batch's           \
     off_policy */                                                                                                \
  X(int32_t, policy_version,       Never,  One,       Zero,           Zero,           None)
// clang-format on

namespace rlf::token_stream {

enum class Batch { Always, Any, All, Never };
enum class Width { One, PerTokenK, PerTokenUpToK };
enum class Fill { Zero, NaN, Column, UniformLogprob, NoId };
enum class Mask { None, Rows, Finite };

}  // namespace rlf::token_stream

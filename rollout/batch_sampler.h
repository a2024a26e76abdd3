// The engine's sampler dispatch: the next token of every row of a step, from
// that step's logits (nano-vllm's Sampler; the per-row sampler itself is
// rollout/sampling.h).
//
// For each row, in this order:
//   1. a row with an appended token queued (a conversation's observation)
//      pushes it as given (log-prob 0) and draws nothing;
//   2. every other row draws from its own RNG: greedy rows and rows with
//      filters (top-k/top-p/min-p) through sample_token_id on host logits,
//      plain temperature sampling by one uniform draw inverted through the
//      tempered CDF (draw_from_weights, or the same on the device);
//   3. the drawn id is pushed with its log-prob at temperature 1, unfiltered
//      (the logit minus the row's temperature-1 normaliser).
// Where the logits live picks the path: CPU logits are sampled on the CPU
// (one vectorised softmax for the batch, rows drawn in parallel), GPU logits
// (or EngineOptions::tensor_sampling) with tensor ops, copying only greedy
// and filtered rows to the CPU. Both paths make the same draws from the same
// generators, so a row's tokens do not depend on the path or on the batch.
//
// Every drawn token passes through one Draw and one push: a per-token record
// that filtered sampling will need later (the kept set of top-k/top-p/min-p,
// for sampling-mask replay in the trainer) belongs in Draw, filled where the
// filtered rows draw, and is pushed onto the Sequence with its token.
//
// A non-finite temperature-1 normaliser throws rlf::Error naming the sequence
// (the weights are corrupt or diverged).
#pragma once

#include <cstdint>
#include <vector>

#include <torch/torch.h>

#include "rollout/sequence.h"

namespace rlf::rollout {

// Samples the next token of rows [row0, row0 + n) from fp32 `logits` [n, V]
// (row i of `logits` belongs to rows[row0 + i]); sets each row's just_forced.
// `tensor_sampling`: take the tensor path even for CPU logits.
void sample_next_tokens(const torch::Tensor& logits, std::vector<Sequence>& rows, int64_t row0,
                        bool tensor_sampling);

}  // namespace rlf::rollout

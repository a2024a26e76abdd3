// Entropy of the next-token distribution, from logits, for an entropy bonus
// (per_token_loss -= coef * entropy) and for logging:
//   H = -sum_v p_v log p_v,  p = softmax(logits)
// Memory: the positions are processed in chunks, so besides the output only
// one chunk's [chunk, V] temporaries exist at a time, in the forward AND in
// the backward pass (a custom autograd function recomputes softmax per chunk
// in backward and saves nothing but the logits, which the caller holds
// anyway). Gradient: dH/dz = -p * (log p + H). Not twice differentiable.
#pragma once

#include <cstdint>

#include <torch/types.h>

namespace rlf::algo {

// logits [B, T, V] (any floating dtype; bf16/half are computed in float32)
// -> [B, T] entropy in nats, dtype float32 (float64 for float64 logits).
// chunk_positions: how many of the B*T positions are processed at once;
// 0 = all at once. Differentiable w.r.t. logits.
torch::Tensor entropy_from_logits(const torch::Tensor& logits, int64_t chunk_positions = 1024);

}  // namespace rlf::algo

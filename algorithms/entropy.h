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

// Self-certainty (Kang et al. 2025, "Scalable Best-of-N Selection for Large
// Language Models via Self-Certainty"; the reward of Intuitor, Zhao et al.
// 2025): the KL divergence from the uniform distribution over the vocabulary
// to the model's next-token distribution, averaged over a sequence's masked
// positions,
//   SC = (1/n) sum_t KL(U || p_t) = (1/n) sum_t [ -log V - (1/V) sum_v log p_t(v) ]
// (>= 0; 0 for a uniform p). logits [B, T, V], mask [B, T] (nonzero = count
// the position) -> [B] float64, no gradient; a row with no masked position
// gets NaN.
torch::Tensor self_certainty(const torch::Tensor& logits, const torch::Tensor& mask);

}  // namespace rlf::algo

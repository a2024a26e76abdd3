// Per-position statistics of a linear classifier's outputs (the LM head's
// logits), chunk by chunk over positions, without keeping any chunk's
// [B, n, V] outputs for backward: recompute in backward (as
// model/recompute.h), specialised to a classifier so that the weight's
// gradient accumulates into one [V, D] buffer (a generic recompute per
// chunk would return one [V, D] gradient per chunk for the engine to add).
//
// Kept for backward: `hidden` and `weight` (references), nothing per chunk.
// Backward, per chunk: z = hidden_c · weightᵀ again, `head` again with
// autograd on z, then d hidden_c = dz · weight and d weight += dzᵀ · hidden_c.
// Peak: one chunk's head graph plus the [V, D] weight gradient (summed in
// fp32 whatever the weight's dtype, cast once; for a large fp32 parameter
// summed into its own .grad, model/grad_in_place.h).
#pragma once

#include <torch/torch.h>

#include <functional>
#include <vector>

namespace rlf {

// The head applied to one chunk: z [B, n, V] (hidden[:, t0:t0+n] · weightᵀ,
// in the weight's dtype) -> per-position outputs, each [B, n, ...]; the same
// number every call, each defined in the first pass (grad mode off). In the
// recomputation (grad mode on) an output without autograd history, or
// undefined, gets no gradient (a logged statistic may skip its work there).
using ClassifierHead = std::function<std::vector<torch::Tensor>(const torch::Tensor& z, int64_t t0, int64_t n)>;

// hidden [B, T, D], weight [V, D]; `chunk` positions per chunk (>= 1).
// Returns the head's outputs concatenated over positions ([B, T, ...]),
// differentiable w.r.t. hidden and weight when either requires a gradient
// (under grad mode); otherwise a plain chunked evaluation. The head must be
// deterministic, and what it captures (targets) unchanged until backward.
std::vector<torch::Tensor> chunked_classifier(const ClassifierHead& head, const torch::Tensor& hidden,
                                              const torch::Tensor& weight, int64_t chunk);

}  // namespace rlf

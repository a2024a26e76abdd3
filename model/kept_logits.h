// A classifier's logits at a few vocabulary rows per position: the policy's
// log-probs over each sampled token's kept set (sampling-mask replay,
// trainer.sampling_replay) need the logits of those ids only, not of the
// whole vocabulary.
//
//   out[r, j] = hidden[r] · weight[ids[r, j]]
//
// hidden [N, D], weight [V, D] (the LM head's, or the tied embedding's),
// ids [N, M] int64, every id in [0, V); out [N, M] in hidden's dtype.
// Differentiable in hidden and weight: d hidden[r] = Σ_j g[r, j] weight[ids[r, j]],
// d weight[v] = Σ_{ids[r, j] = v} g[r, j] hidden[r] (for a large fp32 weight,
// summed into its .grad in place: model/grad_in_place.h). No [N, V] tensor
// exists, forward or backward: at M = 51 against a 32,000-word vocabulary the
// products are 1/600 of the full classifier's.
//
// fp32 on the CPU: rlf's kernels (model/cpu_kernels.h gathered_dots*), each
// value summed in a fixed order whatever the thread count. Elsewhere (CUDA,
// bf16): LibTorch gathers of the weight rows, kChunkRows positions at a time
// in forward and again in backward (nothing per chunk is kept).
#pragma once

#include <torch/torch.h>

#include <cstdint>

namespace rlf {

torch::Tensor kept_logits(const torch::Tensor& hidden, const torch::Tensor& weight, const torch::Tensor& ids);

}  // namespace rlf

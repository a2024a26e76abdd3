// Pieces of the fp32 CPU fast path (model/cpu_fast_forward.cpp) that other
// model code shares.
#pragma once

#include <torch/torch.h>

namespace rlf {

// out [N, O] = x [N, I] @ w [O, I]^T (+ bias [O]): fp32 CPU tensors, w, bias
// and out contiguous. With `panels` (w packed, model/packed_weights.h) rlf's
// panel kernel (cpu::matmul_panels) for any N; otherwise rlf's
// matrix-vector kernel (cpu::matmul_wt) for N <= cpu::kMatmulWtMaxRows
// (decoding), LibTorch's matmul (OpenBLAS) above.
void matmul_wt_into(const torch::Tensor& x, const torch::Tensor& w, const torch::Tensor& bias, torch::Tensor& out,
                    const float* panels = nullptr);

// Log-probabilities of targets [N] (int64) under logits [N, V] (fp32 CPU,
// contiguous): logits[n, targets[n]] - logsumexp(logits[n]), through
// cpu::logsumexp_rows (the sampler's normaliser) with a one-pass backward
// (cpu::logprob_backward_rows) instead of LibTorch's logsumexp + gather
// graph. With `entropy`, also each row's entropy (no gradient).
torch::Tensor fast_token_logprobs(const torch::Tensor& logits, const torch::Tensor& targets,
                                  torch::Tensor* entropy = nullptr);

}  // namespace rlf

// Pieces of the fp32 CPU fast path (model/cpu_fast_forward.cpp) that other
// model code shares.
#pragma once

#include <torch/torch.h>

namespace rlf {

// out [N, O] = x [N, I] @ w [O, I]^T (+ bias [O]): fp32 CPU tensors, w, bias
// and out contiguous. rlf's matrix-vector kernel (cpu::matmul_wt) for
// N <= cpu::kMatmulWtMaxRows (decoding), LibTorch's matmul (OpenBLAS) above.
void matmul_wt_into(const torch::Tensor& x, const torch::Tensor& w, const torch::Tensor& bias, torch::Tensor& out);

}  // namespace rlf

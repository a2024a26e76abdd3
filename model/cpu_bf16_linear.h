// Linear layers (and attention's products) in bf16 on the CPU, where
// LibTorch's own bf16 matmul is slow. Without AVX-512, LibTorch (1.13 and 2.x) runs a bf16
// linear on its reference gemm: [M x 768] x [768 x 2048] at 1.1-1.3 GFLOP/s
// for every M from 1 to 1,024 on the 2-core AMD EPYC Zen 3 (Debian's torch
// 1.13, 2026-11-29), 40-75x slower than fp32 at 64 rows and more. Every
// linear of the module path (projections, LoRA bases, the classifier) goes
// through linear_layer() below, which keeps LibTorch's contract and bf16's
// arithmetic (bf16 inputs and outputs, products summed in fp32, rounded once
// to bf16 at the end, bias included):
//
//   - up to cpu::kMatmulWtMaxRows rows (decoding; any CPU): rlf's
//     matrix-vector kernel reads the bf16 weight as it is (half the bytes
//     of fp32) and widens each value on the fly (cpu::matmul_wt_bf16), so
//     each output sums in the same order whatever the rows and threads;
//   - more rows on a CPU without AVX-512 (cpu_bf16_matmul_fast() false):
//     the weight widened to fp32 once per call and LibTorch's fp32 matmul
//     (OpenBLAS's sgemm);
//   - more rows on a CPU with AVX-512 (oneDNN's bf16 path), or anything not
//     bf16 on the CPU: torch::nn::functional::linear, unchanged.
//
// Differentiable: the backward sums in fp32 through the widened weight and
// input (d input = d out · W, d W = d outᵀ · input, d bias = Σ d out), each
// rounded once to bf16.
#pragma once

#include <torch/torch.h>

namespace rlf {

// y = x · wᵀ (+ bias): x [..., I], w [O, I], bias [O] or undefined; y [..., O].
torch::Tensor linear_layer(const torch::Tensor& x, const torch::Tensor& w, const torch::Tensor& bias = {});

// The input's gradient of linear_layer(): g [..., O] · w [O, I], [..., I]. For bf16
// on the CPU where linear_layer() takes rlf's route, summed in fp32 and rounded
// once to bf16; otherwise LibTorch's matmul.
torch::Tensor linear_layer_input_grad(const torch::Tensor& g, const torch::Tensor& w);

// a · b (torch::matmul's broadcasting) for the module path's other products,
// attention's scores and weighted values: for bf16 on a CPU without AVX-512
// and more than cpu::kMatmulWtMaxRows rows in a (training, prefill) through
// fp32 (the casts differentiable, each result rounded once to bf16),
// otherwise torch::matmul.
torch::Tensor matmul_layer(const torch::Tensor& a, const torch::Tensor& b);

// True when linear_layer(x, w, bias) takes rlf's bf16 route above (either of its
// first two cases) rather than LibTorch's.
bool cpu_bf16_linear_applies(const torch::Tensor& x, const torch::Tensor& w, const torch::Tensor& bias = {});

}  // namespace rlf

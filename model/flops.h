// Model FLOPs of a decoder's forward and training passes, and the machine's
// matmul peak to divide them by (model FLOP utilisation, MFU). One formula
// each; the counts are what the model's arithmetic needs, not what a kernel
// happens to do (recomputation for checkpointing and padding are not
// counted, as MFU conventionally does not).
//
//   const double peak = measure_matmul_peak(torch::kFloat32);   // FLOP/s
//   const double f = training_flops(config, tokens, mean_len, true);
//   double mfu = f / (seconds * peak);
#pragma once

#include <torch/torch.h>

#include <cstdint>

#include "model/config.h"

namespace rlf {

// Forward FLOPs over `tokens` positions in sequences of mean length
// `mean_len`: 2 per weight of every projection and the classifier per token,
// plus causal attention's scores and weighted sum (2 · 2 · D_q · L per token
// over on average mean_len / 2 keys). `classifier_rows`: the vocabulary rows
// the classifier computes per token, on average (< 0: the whole vocabulary;
// log-probs over kept sets compute a few, model/kept_logits.h).
double forward_flops(const ModelConfig& c, double tokens, double mean_len, double classifier_rows = -1);

// Forward and backward: 3 forwards with every weight trained (input and
// weight gradients), 2 with the base frozen (LoRA: input gradients only).
double training_flops(const ModelConfig& c, double tokens, double mean_len, bool full, double classifier_rows = -1);

// The best FLOP/s of `repeats` square n x n products in `dtype` on the CPU
// with the current thread count, after one more as a warm-up: the peak MFU
// divides by. At n = 2048 that is ~0.45 s on 2 AVX2 cores. Smaller products
// read low, and a low peak shows an MFU above 1: on the 2-core AMD EPYC Zen 3
// (2026-11-30, OpenBLAS, 2 threads) 1024³ read 130-142 GFLOP/s, 1536³
// 148-159 and 2048³ 152-168, while a stories110M update's own products ran
// at 146-168. A probe is one moment of the machine: inside one training run
// on that (virtual) machine 2048³ read 145, 93-96, 148-165 and 161-175
// GFLOP/s at the start and after steps 1, 2 and 3. Through
// linear_layer (model/cpu_bf16_linear.h), the route the module path's
// linears take: LibTorch's matmul in fp32 (the fast path's fallback), and for
// bf16 on a CPU without AVX-512 the widened fp32 product; rlf's own kernels
// may beat it.
double measure_matmul_peak(torch::ScalarType dtype, int64_t n = 2048, int repeats = 3);

}  // namespace rlf

// What this CPU's instruction set means for the speed of each compute dtype.
// LibTorch (1.13 and 2.x) runs bf16 matmuls on the CPU through oneDNN only
// when the CPU has AVX-512 (BW, VL and DQ); without it they fall back to a
// reference gemm: a [512x768]x[768x768] linear on a 2-core AVX2 Zen 3 took
// 408 ms in bf16 (1.5 GFLOP/s) and 4.8 ms in fp32 (127 GFLOP/s), 85x
// (torch.nn.functional.linear in Debian's torch 1.13, 2026-11-23). AMX
// (Sapphire Rapids and later) makes bf16 the fast dtype.
#pragma once

#include <string>

namespace rlf {

struct CpuFeatures {
  bool avx2 = false;
  bool avx512 = false;       // AVX-512 F, BW, VL, DQ: oneDNN's bf16 path
  bool avx512_bf16 = false;  // native bf16 dot products
  bool amx_bf16 = false;     // AMX tiles (bf16 matmul ~7x fp32)
};

// The running CPU's features (cpuid; all false on non-x86 builds).
CpuFeatures cpu_features();

// True when bf16 matmuls on this CPU run through oneDNN rather than the slow
// reference kernel.
bool cpu_bf16_matmul_fast();

// The compute dtype that is fast on `device` here: "bf16" on CUDA and on CPUs
// with native bf16 arithmetic (AMX, or AVX-512 with AVX512_BF16: measured on
// a 2-core Sapphire-Rapids-class Xeon with AMX, 2026-11-26, stories110M:
// training 4x256 461 vs 231 tokens/s, generation batch 16 261 vs 186 and
// batch 1 33.3 vs 23.8 tokens/s in bf16 vs fp32); "fp32" elsewhere (AVX2
// CPUs run bf16 on LibTorch's reference kernel, and AVX-512 without
// AVX512_BF16 emulates it, while rlf's fp32 CPU kernels run natively).
std::string fast_dtype(const std::string& device);

// `dtype`, with "auto" replaced by fast_dtype(device).
std::string resolve_dtype(const std::string& dtype, const std::string& device);

// "" when computing in `dtype` on `device` runs at full speed here; otherwise
// a one-line warning that says why and what to use instead.
std::string dtype_speed_warning(const std::string& dtype, const std::string& device);

}  // namespace rlf

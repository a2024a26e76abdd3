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

// "" when computing in `dtype` on `device` runs at full speed here; otherwise
// a one-line warning that says why and what to use instead.
std::string dtype_speed_warning(const std::string& dtype, const std::string& device);

}  // namespace rlf

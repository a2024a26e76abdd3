// What this CPU's instruction set means for the speed of each compute dtype.
// LibTorch (1.13 and 2.x) runs bf16 matmuls on the CPU through oneDNN only
// when the CPU has AVX-512 (BW, VL and DQ); without it they fall back to a
// reference gemm: a [512x768]x[768x768] linear on a 2-core AVX2 Zen 3 took
// 408 ms in bf16 (1.5 GFLOP/s) and 4.8 ms in fp32 (127 GFLOP/s), 85x
// (torch.nn.functional.linear in Debian's torch 1.13, 2026-11-23); rlf's
// module path routes bf16 products around it (model/cpu_bf16_linear.h). AMX
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

// True when LibTorch's bf16 matmuls on this CPU run through oneDNN rather
// than the slow reference kernel.
bool cpu_bf16_matmul_fast();

// What a command does with the model, for "auto" below.
enum class DtypeUse {
  Batched,   // training, reward-model scoring, `rlf bench`: many rows per matmul
  Decoding,  // generate, serve, eval, info: sampling a few streams token by token
};

// The compute dtype that is fast on `device` here: "bf16" on CUDA. On a CPU
// with native bf16 arithmetic (AMX, or AVX-512 with AVX512_BF16) "bf16" for
// Batched work (a 2-core Sapphire-Rapids-class Xeon with AMX, 2026-11-26,
// stories110M: training 4x256 461 vs 231 tokens/s in bf16 vs fp32; a 2-core
// Zen 4 with AVX512_BF16: 388 vs 192-199) and "fp32" for Decoding: rlf's
// fp32 kernels decode as fast or faster (`rlf bench generate --shape
// stories110M --batch B --new-tokens 64`, Zen 4, 2026-11-27: batch 1 69-86
// fp32 vs 50-57 bf16 tokens/s, batch 64 794-801 vs 752-847; Xeon batch 1
// 69.7 vs 52.5), small models several times faster (the fp32 fast path runs
// ~12 calls per layer, LibTorch's bf16 path ~60), and their tokens are
// llama2.c's. "fp32" everywhere else: on AVX2 CPUs bf16 trains at ~0.9x
// fp32's speed (its products go through fp32, model/cpu_bf16_linear.h) and
// decodes batches of 32 as fast as fp32 and of 64 at ~0.9x; only one
// stream (~2x) and small batches (8: ~1.45x) decode faster, reading half the
// bytes (AMD EPYC Zen 3, 2026-11-29), and fp32 keeps llama2.c's tokens.
// AVX-512 without AVX512_BF16 emulates it.
std::string fast_dtype(const std::string& device, DtypeUse use = DtypeUse::Batched);

// `dtype`, with "auto" replaced by fast_dtype(device, use).
std::string resolve_dtype(const std::string& dtype, const std::string& device, DtypeUse use = DtypeUse::Batched);

// "" when computing in `dtype` on `device` runs at full speed here; otherwise
// a one-line warning that says why and what to use instead.
std::string dtype_speed_warning(const std::string& dtype, const std::string& device);

}  // namespace rlf

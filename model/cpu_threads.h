// CPU thread pools. Debian's LibTorch (1.13) runs elementwise ops and bf16
// matmuls (oneDNN) on its OpenMP pool, but sends fp32 matmuls to OpenBLAS,
// which keeps a pthread pool of its own. Both pools busy-wait between calls,
// so with both sized to the core count they steal each other's cores: fp32
// decoding of stories110M at batch 64 on 2 cores took 508 ms/step that way,
// 173 ms with the plan below (`rlf bench generate --shape stories110M --batch
// 64 --dtype fp32 --new-tokens 128`). The plan gives the cores to the pool
// that does the dtype's matmuls:
//   fp32 on CPU, and bf16 on a CPU without oneDNN's bf16 path
//   (cpu_bf16_matmul_fast() false: rlf's kernels and OpenBLAS multiply it,
//   model/cpu_bf16_linear.h), OpenBLAS present:
//                                   OpenBLAS = n, LibTorch = 1
//   otherwise (bf16 with oneDNN, fp16, CUDA, a LibTorch without OpenBLAS,
//   e.g. MKL):                      LibTorch = n, OpenBLAS = 1
// (bf16 on the 2-core AVX2 Zen 3, 2026-11-29, the second plan against the
// first: training stories110M 4x256 122-125 against 85 tokens/s, decoding
// batch 64 247-253 against 150; `rlf bench train|generate ... --dtype bf16`.)
// rlf's own fp32 kernels (model/cpu_kernels.h: decoding's matrix-vector
// products, attention, RMSNorm, SwiGLU) get n threads in every plan; they run
// between the BLAS calls, never beside them.
#pragma once

#include <string>

namespace rlf {

struct CpuThreadPlan {
  int torch_threads = 1;  // at::set_num_threads
  int blas_threads = 1;   // openblas_set_num_threads (ignored without OpenBLAS)
  int kernel_threads = 1; // cpu::set_kernel_threads
};

// Cores this process may run on (sched_getaffinity).
int available_cores();

// True when OpenBLAS's openblas_set_num_threads is linked into the process.
bool openblas_present();

// `threads` = 0 means all available cores. `dtype` "" counts as fp32.
CpuThreadPlan plan_cpu_threads(int threads, const std::string& dtype, const std::string& device);

// Applies the plan; returns it.
CpuThreadPlan apply_cpu_threads(const CpuThreadPlan& plan);

// plan + apply in one call.
CpuThreadPlan configure_cpu_threads(int threads, const std::string& dtype, const std::string& device = "cpu");

}  // namespace rlf

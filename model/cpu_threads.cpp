#include "model/cpu_threads.h"

#include <ATen/Parallel.h>
#include <dlfcn.h>
#include <sched.h>

#include <algorithm>
#include <thread>

#include "model/cpu_features.h"
#include "model/cpu_kernels.h"
#include "util/error.h"

namespace rlf {

namespace {

using SetThreadsFn = void (*)(int);

SetThreadsFn openblas_setter() {
  static SetThreadsFn fn = reinterpret_cast<SetThreadsFn>(dlsym(RTLD_DEFAULT, "openblas_set_num_threads"));
  return fn;
}

}  // namespace

int available_cores() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) return std::max(1, CPU_COUNT(&set));
  return std::max(1u, std::thread::hardware_concurrency());
}

bool openblas_present() { return openblas_setter() != nullptr; }

CpuThreadPlan plan_cpu_threads(int threads, const std::string& dtype, const std::string& device) {
  check(threads >= 0, "threads must be >= 0 (0 = all cores), got ", threads);
  const int n = threads == 0 ? available_cores() : threads;
  const bool fp32 = dtype.empty() || dtype == "fp32" || dtype == "float32";
  const bool bf16 = dtype == "bf16" || dtype == "bfloat16";
  const bool cpu = device.empty() || device == "cpu";
  // bf16 without oneDNN's bf16 path: its products are rlf's kernels and OpenBLAS's sgemm (model/cpu_bf16_linear.h)
  const bool blas_matmuls = fp32 || (bf16 && !cpu_bf16_matmul_fast());
  if (blas_matmuls && cpu && openblas_present()) return {.torch_threads = 1, .blas_threads = n, .kernel_threads = n};
  return {.torch_threads = n, .blas_threads = 1, .kernel_threads = n};
}

CpuThreadPlan apply_cpu_threads(const CpuThreadPlan& plan) {
  at::set_num_threads(plan.torch_threads);
  if (auto fn = openblas_setter()) fn(plan.blas_threads);
  cpu::set_kernel_threads(plan.kernel_threads);
  return plan;
}

CpuThreadPlan configure_cpu_threads(int threads, const std::string& dtype, const std::string& device) {
  return apply_cpu_threads(plan_cpu_threads(threads, dtype, device));
}

}  // namespace rlf

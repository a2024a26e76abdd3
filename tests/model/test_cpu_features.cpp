// CPU feature detection (model/cpu_features.h) against the kernel's view of
// the CPU (/proc/cpuinfo flags), the bf16 speed warning, and the thread plan.
#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "model/cpu_features.h"
#include "model/cpu_threads.h"

namespace rlf {
namespace {

// The first "flags" line of /proc/cpuinfo as a set; empty when unreadable.
std::set<std::string> proc_cpu_flags() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("flags", 0) != 0) continue;
    std::istringstream words(line.substr(line.find(':') + 1));
    std::set<std::string> out;
    for (std::string w; words >> w;) out.insert(w);
    return out;
  }
  return {};
}

TEST(CpuFeatures, AgreeWithProcCpuinfo) {
  const auto flags = proc_cpu_flags();
  if (flags.empty()) GTEST_SKIP() << "no /proc/cpuinfo flags on this system";
  const CpuFeatures f = cpu_features();
  EXPECT_EQ(f.avx2, flags.count("avx2") == 1);
  const bool avx512 = flags.count("avx512f") && flags.count("avx512bw") && flags.count("avx512vl") &&
                      flags.count("avx512dq");
  EXPECT_EQ(f.avx512, avx512);
  EXPECT_EQ(f.avx512_bf16, flags.count("avx512_bf16") == 1);
  EXPECT_EQ(cpu_bf16_matmul_fast(), avx512);
}

TEST(CpuFeatures, Bf16WarningOnlyWhereBf16IsSlow) {
  EXPECT_EQ(dtype_speed_warning("fp32", "cpu"), "");
  EXPECT_EQ(dtype_speed_warning("bf16", "cuda"), "");
  EXPECT_EQ(dtype_speed_warning("bf16", "cuda:1"), "");
  const std::string w = dtype_speed_warning("bf16", "cpu");
  if (cpu_bf16_matmul_fast()) {
    EXPECT_EQ(w, "");
  } else {
    EXPECT_NE(w.find("AVX-512"), std::string::npos) << w;
    EXPECT_NE(w.find("fp32"), std::string::npos) << w;  // names the fix
  }
  EXPECT_EQ(dtype_speed_warning("bfloat16", "cpu"), w);
}

// "auto" picks bf16 where it is native (GPU, AMX, AVX512_BF16), fp32 elsewhere,
// and never a dtype the speed warning would object to.
TEST(CpuFeatures, AutoDtypeIsTheFastOneHere) {
  EXPECT_EQ(fast_dtype("cuda"), "bf16");
  EXPECT_EQ(fast_dtype("cuda:1"), "bf16");
  const CpuFeatures f = cpu_features();
  EXPECT_EQ(fast_dtype("cpu"), f.amx_bf16 || (f.avx512 && f.avx512_bf16) ? "bf16" : "fp32");
  EXPECT_EQ(dtype_speed_warning(fast_dtype("cpu"), "cpu"), "");
  EXPECT_EQ(resolve_dtype("auto", "cpu"), fast_dtype("cpu"));
  EXPECT_EQ(resolve_dtype("fp32", "cuda"), "fp32");
  EXPECT_EQ(resolve_dtype("bf16", "cpu"), "bf16");
  // Decoding (generate, serve, eval, info): bf16 on a GPU, fp32 on every CPU
  // (rlf's fp32 kernels decode one stream at least as fast as bf16 there).
  EXPECT_EQ(fast_dtype("cuda", DtypeUse::Decoding), "bf16");
  EXPECT_EQ(fast_dtype("cpu", DtypeUse::Decoding), "fp32");
  EXPECT_EQ(resolve_dtype("auto", "cuda:0", DtypeUse::Decoding), "bf16");
  EXPECT_EQ(resolve_dtype("auto", "cpu", DtypeUse::Decoding), "fp32");
  EXPECT_EQ(resolve_dtype("bf16", "cpu", DtypeUse::Decoding), "bf16");
}

TEST(CpuThreads, PlanGivesCoresToThePoolThatDoesTheMatmuls) {
  const CpuThreadPlan bf16 = plan_cpu_threads(3, "bf16", "cpu");
  const CpuThreadPlan fp32 = plan_cpu_threads(3, "fp32", "cpu");
  const CpuThreadPlan fp16 = plan_cpu_threads(3, "fp16", "cpu");
  if (openblas_present()) {
    EXPECT_EQ(fp32.torch_threads, 1);
    EXPECT_EQ(fp32.blas_threads, 3);
  } else {
    EXPECT_EQ(fp32.torch_threads, 3);
  }
  // bf16: oneDNN's pool where LibTorch multiplies bf16 natively, else OpenBLAS's (rlf widens for it)
  if (cpu_bf16_matmul_fast() || !openblas_present()) {
    EXPECT_EQ(bf16.torch_threads, 3);
    EXPECT_EQ(bf16.blas_threads, 1);
  } else {
    EXPECT_EQ(bf16.torch_threads, 1);
    EXPECT_EQ(bf16.blas_threads, 3);
  }
  EXPECT_EQ(fp16.torch_threads, 3);
  EXPECT_EQ(fp16.blas_threads, 1);
  EXPECT_EQ(bf16.kernel_threads, 3);
  EXPECT_EQ(fp32.kernel_threads, 3);
  EXPECT_EQ(plan_cpu_threads(3, "fp32", "cuda").torch_threads, 3);
  EXPECT_EQ(plan_cpu_threads(3, "bf16", "cuda").torch_threads, 3);
  EXPECT_EQ(plan_cpu_threads(0, "fp16", "cpu").torch_threads, available_cores());
  EXPECT_THROW(plan_cpu_threads(-1, "fp32", "cpu"), std::exception);
}

}  // namespace
}  // namespace rlf

#include "model/cpu_features.h"

namespace rlf {

CpuFeatures cpu_features() {
  CpuFeatures f;
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  f.avx2 = __builtin_cpu_supports("avx2");
  f.avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
             __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
  f.avx512_bf16 = __builtin_cpu_supports("avx512bf16");
#if defined(__GNUC__) && __GNUC__ >= 11
  f.amx_bf16 = __builtin_cpu_supports("amx-bf16");
#endif
#endif
  return f;
}

bool cpu_bf16_matmul_fast() { return cpu_features().avx512; }

std::string fast_dtype(const std::string& device, DtypeUse use) {
  if (device.rfind("cuda", 0) == 0) return "bf16";
  if (use == DtypeUse::Decoding) return "fp32";
  const CpuFeatures f = cpu_features();
  return f.amx_bf16 || (f.avx512 && f.avx512_bf16) ? "bf16" : "fp32";
}

std::string resolve_dtype(const std::string& dtype, const std::string& device, DtypeUse use) {
  return dtype == "auto" ? fast_dtype(device, use) : dtype;
}

std::string dtype_speed_warning(const std::string& dtype, const std::string& device) {
  const bool cpu = device.empty() || device == "cpu";
  const bool bf16 = dtype == "bf16" || dtype == "bfloat16";
  if (!cpu || !bf16 || cpu_bf16_matmul_fast()) return "";
  return "warning: this CPU has no AVX-512, so bf16 trains and decodes batches of 32 or more slower than fp32 here "
         "(rlf computes bf16 products through fp32; LibTorch's own bf16 kernels are its slow reference ones; only one "
         "stream and small batches decode faster, reading half the bytes); use dtype = \"fp32\" (--dtype fp32 / "
         "--set model.dtype=fp32) on this machine";
}

}  // namespace rlf

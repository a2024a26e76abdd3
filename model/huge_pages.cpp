#include "model/huge_pages.h"

#include <cstdint>
#include <cstdlib>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace rlf {

torch::Tensor empty_in_huge_pages(at::IntArrayRef sizes, const torch::TensorOptions& options) {
  constexpr size_t kHuge = size_t{2} << 20;
  int64_t numel = 1;
  for (int64_t s : sizes) numel *= s;
  const size_t bytes = static_cast<size_t>(numel) * c10::elementSize(c10::typeMetaToScalarType(options.dtype()));
  if (bytes < kHuge) return torch::empty(sizes, options);
  const size_t len = (bytes + kHuge - 1) / kHuge * kHuge;
  // From the C allocator, so a freed block goes back to the process's heap
  // (reuse_large_allocations) and the next request of its size gets it
  // without page faults: decoding's panels are packed afresh into the same
  // memory every rollout. Advised before its first touch where it is fresh.
  void* mem = nullptr;
  if (posix_memalign(&mem, kHuge, len) != 0) return torch::empty(sizes, options);
#if defined(__linux__)
  madvise(mem, len, MADV_HUGEPAGE);  // failure leaves ordinary pages
#endif
  auto release = [](void* q) { std::free(q); };
  return torch::from_blob(mem, sizes, release, options.device(torch::kCPU));
}

int64_t place_in_huge_pages(torch::nn::Module& module) {
  constexpr size_t kHuge = size_t{2} << 20;
  torch::NoGradGuard ng;
  int64_t moved = 0;
  for (auto& p : module.parameters()) {
    if (!p.defined() || !p.is_cpu() || !p.is_contiguous()) continue;
    const size_t bytes = static_cast<size_t>(p.numel()) * p.element_size();
    if (bytes < kHuge) continue;
    torch::Tensor t = empty_in_huge_pages(p.sizes(), p.options().requires_grad(false));
    t.copy_(p);
    p.set_data(t);
    moved += static_cast<int64_t>(bytes);
  }
  return moved;
}

bool reuse_large_allocations() {
#if defined(__GLIBC__)
  constexpr int kThreshold = 1 << 30;
  return mallopt(M_MMAP_THRESHOLD, kThreshold) == 1 && mallopt(M_TRIM_THRESHOLD, kThreshold) == 1;
#else
  return false;
#endif
}

}  // namespace rlf

#include "model/huge_pages.h"

#include <cstdlib>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace rlf {

int64_t place_in_huge_pages(torch::nn::Module& module) {
  constexpr size_t kHuge = size_t{2} << 20;
  torch::NoGradGuard ng;
  int64_t moved = 0;
  for (auto& p : module.parameters()) {
    if (!p.defined() || !p.is_cpu() || !p.is_contiguous()) continue;
    const size_t bytes = static_cast<size_t>(p.numel()) * p.element_size();
    if (bytes < kHuge) continue;
    const size_t len = (bytes + kHuge - 1) / kHuge * kHuge;
    void* mem = nullptr;
    if (posix_memalign(&mem, kHuge, len) != 0) continue;
#if defined(__linux__)
    madvise(mem, len, MADV_HUGEPAGE);  // before the first touch; failure leaves ordinary pages
#endif
    torch::Tensor t = torch::from_blob(mem, p.sizes(), [](void* q) { std::free(q); }, p.options().requires_grad(false));
    t.copy_(p);
    p.set_data(t);
    moved += static_cast<int64_t>(bytes);
  }
  return moved;
}

}  // namespace rlf

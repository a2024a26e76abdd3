#include "model/packed_weights.h"

#include "model/cpu_kernels.h"
#include "model/huge_pages.h"
#include "util/error.h"

namespace rlf {

void PackedWeights::pack(const torch::Tensor& w) {
  check(w.dim() == 2 && w.is_cpu() && w.scalar_type() == torch::kFloat32 && w.is_contiguous(),
        "PackedWeights::pack: expected a contiguous 2-D fp32 CPU tensor, got ", w.sizes(), " ", w.scalar_type());
  const int64_t O = w.size(0), I = w.size(1);
  Entry e;
  e.source = w;
  e.data = w.data_ptr();
  e.version = w._version();
  e.rows = O, e.cols = I;
  // In huge pages like the weights they copy (model/huge_pages.h): one
  // stream reads them all once per token. Aligned to 64 bytes either way
  // (LibTorch's allocator below 2 MiB), which the kernel's aligned loads need.
  e.panels = empty_in_huge_pages({cpu::panel_floats(O, I)}, torch::TensorOptions().dtype(torch::kFloat32));
  check(reinterpret_cast<uintptr_t>(e.panels.data_ptr()) % 64 == 0, "PackedWeights::pack: panels not 64-byte aligned");
  cpu::pack_panels(w.data_ptr<float>(), O, I, e.panels.data_ptr<float>());
  entries_[w.unsafeGetTensorImpl()] = std::move(e);
}

const float* PackedWeights::find(const torch::Tensor& w) const {
  if (!w.defined()) return nullptr;
  const auto it = entries_.find(w.unsafeGetTensorImpl());
  if (it == entries_.end()) return nullptr;
  const Entry& e = it->second;
  if (e.data != w.data_ptr() || e.version != w._version() || w.dim() != 2 || e.rows != w.size(0) || e.cols != w.size(1)) return nullptr;
  return e.panels.data_ptr<float>();
}

int64_t PackedWeights::bytes() const {
  int64_t n = 0;
  for (const auto& [impl, e] : entries_) n += e.panels.numel() * static_cast<int64_t>(sizeof(float));
  return n;
}

}  // namespace rlf

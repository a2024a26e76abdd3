// Decoding's weights packed into column panels (cpu::pack_panels), the layout
// cpu::matmul_panels streams. A rollout or a server decodes many steps with
// weights that do not change between them, so they are packed once per
// generate call (RolloutEngine) and every step's products read the panels
// instead of the [out, in] matrices (docs/DESIGN.md has the measurements).
//
// Derived state, never the source of truth: find() hands out panels only for
// the very tensor they were packed from, at the same storage, shape and
// version counter; anything else (a weight replaced, resized, or changed in
// place through LibTorch) gets null and the caller uses the unpacked path.
// Writes through raw pointers do not bump the version counter: whoever makes
// them bumps it (train/optimizer.cpp does), and the engine repacks at the
// start of every generate call regardless.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <unordered_map>

namespace rlf {

class PackedWeights {
 public:
  // Packs w (2-D, fp32, CPU, contiguous) afresh, replacing any packing of it.
  void pack(const torch::Tensor& w);
  // The panels of w (cpu::panel_floats(w.size(0), w.size(1)) floats), or
  // null when w was not packed or is no longer what was packed.
  const float* find(const torch::Tensor& w) const;
  void clear() { entries_.clear(); }
  bool empty() const { return entries_.empty(); }
  int64_t bytes() const;  // panels held

 private:
  struct Entry {
    torch::Tensor source;  // holds the tensor, so its address is not reused while packed
    const void* data = nullptr;
    int64_t version = 0;
    int64_t rows = 0, cols = 0;
    torch::Tensor panels;  // fp32 [panel_floats]
  };
  std::unordered_map<const c10::TensorImpl*, Entry> entries_;
};

}  // namespace rlf

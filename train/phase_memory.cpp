#include "train/phase_memory.h"

#if defined(RLF_WITH_CUDA_STATS)
#include <c10/cuda/CUDACachingAllocator.h>
#endif

namespace rlf {

void PhasePeak::begin() {
  rss_.begin();
#if defined(RLF_WITH_CUDA_STATS)
  if (device_.is_cuda()) c10::cuda::CUDACachingAllocator::resetPeakStats(device_.index() < 0 ? 0 : device_.index());
#endif
}

double PhasePeak::cuda_peak_mb() const {
#if defined(RLF_WITH_CUDA_STATS)
  if (device_.is_cuda()) {
    const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(device_.index() < 0 ? 0 : device_.index());
    return static_cast<double>(stats.allocated_bytes[0].peak) / 1e6;  // [0]: StatType::AGGREGATE (every pool)
  }
#endif
  return 0.0;
}

void PhasePeak::write(Json& m, const std::string& phase) const {
  m["mem/rss_peak_mb_" + phase] = rss_.peak_mb();
  if (device_.is_cuda()) m["mem/cuda_peak_mb_" + phase] = cuda_peak_mb();
}

}  // namespace rlf

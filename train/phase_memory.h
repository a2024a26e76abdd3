// The peak memory of one phase of a step (rollout, reference, update): the
// process's resident memory (util/memory_usage.h PeakRss) and, on a CUDA
// device, the caching allocator's peak of allocated bytes since begin()
// (its peak statistic reset there). CUDA peaks need a CUDA LibTorch build
// (RLF_WITH_CUDA_STATS, set by train/CMakeLists.txt where LibTorch has
// CUDA); a build without one has no CUDA device to measure.
//
//   PhasePeak peak(model->device());
//   peak.begin();
//   ... the update ...
//   peak.write(m, "update");  // mem/rss_peak_mb_update, mem/cuda_peak_mb_update on a GPU
#pragma once

#include <torch/torch.h>

#include <string>

#include "util/json_util.h"
#include "util/memory_usage.h"

namespace rlf {

class PhasePeak {
 public:
  explicit PhasePeak(torch::Device device) : device_(device) {}
  void begin();
  double rss_peak_mb() const { return rss_.peak_mb(); }
  // The allocator's peak of allocated bytes since begin(), in MB (1e6 bytes); 0 off CUDA.
  double cuda_peak_mb() const;
  // "mem/rss_peak_mb_<phase>" and, on a CUDA device, "mem/cuda_peak_mb_<phase>".
  void write(Json& m, const std::string& phase) const;

 private:
  torch::Device device_;
  PeakRss rss_;
};

}  // namespace rlf

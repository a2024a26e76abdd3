// Memory of this process and machine. PeakRss: the process's peak resident memory over a phase of a step (rollout,
// update), from Linux's high-water mark: begin() resets the mark
// (/proc/self/clear_refs "5"), peak_mb() reads it (VmHWM in /proc/self/status).
//
//   PeakRss peak;
//   peak.begin();
//   ... the update ...
//   m["mem/rss_peak_mb_update"] = peak.peak_mb();
//
// Where the reset is refused (no /proc, a kernel without it) the mark is the
// process's peak so far, never lower than the phase's: resets_work() says
// which. The mark is one per process: phases that overlap (rollouts in a
// pipeline thread during the update) share it. peak_mb() is 0 where
// /proc/self/status cannot be read.
#pragma once

#include <cstdint>

namespace rlf {

class PeakRss {
 public:
  void begin();                      // starts a phase: resets the high-water mark
  double peak_mb() const;            // the high-water mark now, in MB (1e6 bytes)
  bool resets_work() const { return resets_work_; }

 private:
  bool resets_work_ = false;
};

// The resident memory now, in MB (VmRSS; 0 where it cannot be read).
double current_rss_mb();

// The memory this process may use, in bytes: the machine's physical memory,
// or the cgroup's limit (memory.max, v2; memory.limit_in_bytes, v1) where
// lower.
int64_t usable_memory_bytes();

}  // namespace rlf

// Wall-clock readings for the timings a run reports (seconds per phase,
// tokens per second), from the monotonic clock. Never an input to a result.
#pragma once

#include <chrono>

namespace rlf {

// Seconds on the monotonic clock since an arbitrary fixed point.
inline double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Seconds elapsed since t0.
inline double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace rlf

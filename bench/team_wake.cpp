/* What a kernel call costs when the team's workers have gone to sleep
 * (model/cpu_team.h): each worker spins `spin_us` after a job, then sleeps on
 * a futex, and the next call has to wake it. A decoding step calls the team
 * ~10 times a layer; any work on the calling thread alone in between that
 * lasts longer than the spin puts the workers to sleep (the KV-cache write,
 * RoPE and the residual adds did, until they moved onto the team).
 *
 * Times one small job (an RMSNorm's worth: 64 rows of 768 floats, split over
 * the team) right after another (gap 0) and after G microseconds of busy work
 * on the calling thread alone, for each G, with the team built with the given
 * spin. Prints one JSON line: for each gap the median and 90th percentile of
 * the call, in microseconds, over 2,000 calls.
 * Built without LibTorch, against the team itself:
 *   g++ -std=c++20 -O3 -march=native -I. bench/team_wake.cpp model/cpu_team.cpp -lpthread -o team_wake
 *   ./team_wake [threads=2] [spin_us=50]
 */
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "model/cpu_team.h"

namespace {

using Clock = std::chrono::steady_clock;

double us_since(Clock::time_point t0) { return std::chrono::duration<double, std::micro>(Clock::now() - t0).count(); }

void busy_for(double us) {
  const auto t0 = Clock::now();
  while (us_since(t0) < us) {
  }
}

}  // namespace

int main(int argc, char** argv) {
  const int threads = argc > 1 ? std::atoi(argv[1]) : 2;
  const int spin_us = argc > 2 ? std::atoi(argv[2]) : 50;
  if (threads < 2 || spin_us < 0) {
    std::fprintf(stderr, "usage: team_wake [threads >= 2] [spin_us >= 0]\n");
    return 2;
  }
  rlf::cpu::ThreadTeam team(threads, spin_us);
  constexpr int64_t kRows = 64, kCols = 768;
  std::vector<float> x(kRows * kCols, 0.5f), y(kRows * kCols);
  // An RMSNorm over the rows, 16 rows a task.
  const std::function<void(int64_t)> job = [&](int64_t task) {
    for (int64_t r = task * 16; r < std::min(kRows, (task + 1) * 16); ++r) {
      const float* xr = x.data() + r * kCols;
      float ss = 0;
      for (int64_t i = 0; i < kCols; ++i) ss += xr[i] * xr[i];
      const float s = 1.0f / std::sqrt(ss / kCols + 1e-5f);
      for (int64_t i = 0; i < kCols; ++i) y[r * kCols + i] = xr[i] * s;
    }
  };
  const int64_t tasks = kRows / 16;
  std::string out = "{\"threads\": " + std::to_string(threads) + ", \"spin_us\": " + std::to_string(spin_us);
  for (const int gap : {0, 20, 40, 60, 100, 200, 1000}) {
    std::vector<double> us;
    for (int r = 0; r < 2000; ++r) {
      busy_for(gap);
      const auto t0 = Clock::now();
      team.run(tasks, job);
      us.push_back(us_since(t0));
    }
    std::sort(us.begin(), us.end());
    char buf[128];
    std::snprintf(buf, sizeof buf, ", \"gap_%d_us\": {\"median\": %.1f, \"p90\": %.1f}", gap, us[us.size() / 2],
                  us[us.size() * 9 / 10]);
    out += buf;
  }
  std::printf("%s, \"check\": %g}\n", out.c_str(), static_cast<double>(y[0]));
  return 0;
}

// A team of worker threads for rlf's CPU kernels (model/cpu_kernels.h).
// Not OpenMP: libgomp's idle workers spin for ~300,000 pause loops after
// every parallel region (tens of milliseconds where a pause costs ~140
// cycles, as on Sapphire Rapids), and OpenBLAS's pool, which runs the large
// matmuls between the kernels, then waits for the cores: stories110M decoding
// at batch 16 took 156 ms/step with OpenMP kernels beside OpenBLAS and 59 ms
// with GOMP_SPINCOUNT=10000 (2026-11-26, 2 cores). The team's workers spin at
// most `spin_us` after a job, then sleep on a futex (std::atomic::wait).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <thread>
#include <vector>

namespace rlf::cpu {

class ThreadTeam {
 public:
  // threads >= 1 (the calling thread is one of them).
  explicit ThreadTeam(int threads, int spin_us = 50);
  ~ThreadTeam();
  ThreadTeam(const ThreadTeam&) = delete;
  ThreadTeam& operator=(const ThreadTeam&) = delete;

  int threads() const { return static_cast<int>(workers_.size()) + 1; }

  // Calls f(task) for task in [0, tasks): thread t of the team runs tasks
  // t, t + threads(), ... (a fixed assignment). Returns when all are done.
  // From inside a task (or from a thread other than the team's owner while
  // the team is busy) it runs the tasks on the calling thread.
  void run(int64_t tasks, const std::function<void(int64_t)>& f);

 private:
  void worker(int index);
  void work(int index);

  std::vector<std::thread> workers_;
  const std::function<void(int64_t)>* job_ = nullptr;
  int64_t tasks_ = 0;
  std::atomic<uint32_t> generation_{0};  // 32-bit: a futex word
  std::atomic<int> pending_{0};
  std::atomic<bool> busy_{false};
  std::atomic<bool> stop_{false};
  int spin_us_;
};

}  // namespace rlf::cpu

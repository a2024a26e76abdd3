#include "model/cpu_team.h"

#include <chrono>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define RLF_PAUSE() _mm_pause()
#else
#define RLF_PAUSE() std::this_thread::yield()
#endif

namespace rlf::cpu {

namespace {

// Spins while `a` holds `old` for up to spin_us, then sleeps until it changes.
template <class T>
void wait_while(const std::atomic<T>& a, T old, int spin_us) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::microseconds(spin_us);
  for (int i = 0; a.load(std::memory_order_acquire) == old; ++i) {
    if ((i & 63) == 63 && std::chrono::steady_clock::now() > deadline) {
      while (a.load(std::memory_order_acquire) == old) a.wait(old, std::memory_order_acquire);
      return;
    }
    RLF_PAUSE();
  }
}

}  // namespace

ThreadTeam::ThreadTeam(int threads, int spin_us) : spin_us_(spin_us) {
  for (int i = 1; i < threads; ++i) workers_.emplace_back([this, i] { worker(i); });
}

ThreadTeam::~ThreadTeam() {
  stop_.store(true);
  generation_.fetch_add(1, std::memory_order_release);
  generation_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadTeam::work(int index) {
  const int64_t step = threads();
  for (int64_t t = index; t < tasks_; t += step) (*job_)(t);
}

void ThreadTeam::worker(int index) {
  uint32_t seen = 0;
  for (;;) {
    wait_while(generation_, seen, spin_us_);
    seen = generation_.load(std::memory_order_acquire);
    if (stop_.load()) return;
    work(index);
    if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) pending_.notify_one();
  }
}

void ThreadTeam::run(int64_t tasks, const std::function<void(int64_t)>& f) {
  bool expected = false;
  if (workers_.empty() || tasks <= 1 || !busy_.compare_exchange_strong(expected, true)) {
    for (int64_t t = 0; t < tasks; ++t) f(t);
    return;
  }
  job_ = &f;
  tasks_ = tasks;
  pending_.store(static_cast<int>(workers_.size()), std::memory_order_relaxed);
  generation_.fetch_add(1, std::memory_order_release);
  generation_.notify_all();
  work(0);
  for (int left; (left = pending_.load(std::memory_order_acquire)) != 0;) wait_while(pending_, left, spin_us_);
  job_ = nullptr;
  busy_.store(false);
}

}  // namespace rlf::cpu

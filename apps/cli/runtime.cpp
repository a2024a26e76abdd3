#include "apps/cli/runtime.h"

#include <ATen/Parallel.h>
#include <sched.h>

#include <thread>

#include "util/error.h"

namespace rlf::cli {

int available_cores() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) return std::max(1, CPU_COUNT(&set));
  return std::max(1u, std::thread::hardware_concurrency());
}

int configure_threads(const Args& args) {
  int64_t n = args.integer("threads");
  check(n >= 0, "--threads must be >= 0 (0 = all cores), got ", n);
  int threads = n == 0 ? available_cores() : static_cast<int>(n);
  at::set_num_threads(threads);
  return threads;
}

}  // namespace rlf::cli

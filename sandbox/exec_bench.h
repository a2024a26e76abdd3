// Throughput of the sandbox: how many trivial programs per second a pool of
// workers runs (each in its own jail). Backs `rlf bench exec`.
#pragma once

#include <cstdint>

#include "sandbox/sandbox.h"

namespace rlf::sandbox {

struct ExecBenchReport {
  int64_t n_programs = 0;
  int n_workers = 0;
  int64_t n_ok = 0;              // programs that ended with status ok (all, on a healthy host)
  int64_t wall_ms = 0;
  double programs_per_s = 0.0;
  double mean_run_ms = 0.0;      // mean wall_ms of one run (setup + Python start-up + teardown)
};

// Runs `n_programs` copies of a trivial program (print one line) on `n_workers`
// threads (0 = default_workers()). Throws rlf::Error when n_programs < 1.
ExecBenchReport bench_exec(int64_t n_programs, int n_workers, const SandboxOptions& options);

}  // namespace rlf::sandbox

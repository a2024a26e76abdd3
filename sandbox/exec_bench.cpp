#include "sandbox/exec_bench.h"

#include <chrono>
#include <string>
#include <vector>

#include "sandbox/run_many.h"
#include "util/error.h"

namespace rlf::sandbox {

ExecBenchReport bench_exec(int64_t n_programs, int n_workers, const SandboxOptions& options) {
  check(n_programs >= 1, "bench exec: the number of programs must be >= 1, got ", n_programs);
  check_sandbox_supported(options);  // keep the one-off probe out of the timing
  std::vector<std::string> programs(size_t(n_programs), "print(sum(range(10)))\n");
  auto start = std::chrono::steady_clock::now();
  std::vector<ExecResult> results = run_many(programs, options, n_workers);
  auto wall = std::chrono::steady_clock::now() - start;
  ExecBenchReport report;
  report.n_programs = n_programs;
  report.n_workers = n_workers == 0 ? default_workers() : n_workers;
  report.wall_ms = std::chrono::duration_cast<std::chrono::milliseconds>(wall).count();
  double total_run_ms = 0;
  for (const ExecResult& result : results) {
    report.n_ok += result.status == ExecStatus::ok && result.stdout_text == "45\n";
    total_run_ms += double(result.wall_ms);
  }
  double seconds = std::chrono::duration<double>(wall).count();
  report.programs_per_s = seconds > 0 ? double(n_programs) / seconds : 0.0;
  report.mean_run_ms = total_run_ms / double(n_programs);
  return report;
}

}  // namespace rlf::sandbox

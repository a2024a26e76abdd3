// `rlf bench exec`: sandbox throughput, trivial programs per second on a pool
// of workers (each program in its own jail).
#include <iostream>

#include "apps/cli/cli.h"
#include "sandbox/exec_bench.h"
#include "sandbox/report_json.h"

namespace rlf::cli {

CommandSpec make_bench_exec_command() {
  CommandSpec cmd;
  cmd.name = "bench exec";
  cmd.summary = "measure sandboxed trivial Python programs per second";
  cmd.options = {
      {"programs", OptKind::Int, "200", "number of programs to run", "N", 1, 1e6},
      {"workers", OptKind::Int, "0", "programs run in parallel (0 = one per hardware thread)", "N", 0, 1024},
      {"json", OptKind::Flag, "false", "print one JSON object instead of a summary", ""},
  };
  cmd.run = [](const Args& args) {
    sandbox::SandboxOptions options;
    sandbox::ExecBenchReport report =
        sandbox::bench_exec(args.integer("programs"), static_cast<int>(args.integer("workers")), options);
    if (args.flag("json")) {
      std::cout << json_line(sandbox::to_json(report)) << "\n";
    } else {
      std::cout << report.n_programs << " programs on " << report.n_workers << " workers: " << report.programs_per_s
                << " programs/s (mean run " << report.mean_run_ms << " ms, " << report.n_ok << " ok)\n";
    }
    return report.n_ok == report.n_programs ? 0 : 1;
  };
  return cmd;
}

}  // namespace rlf::cli

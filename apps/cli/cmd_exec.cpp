// `rlf exec --lang python FILE`: runs one program in the sandbox and prints
// one JSON object (status, exit_code, stdout, stderr, wall_ms, ...). Exits 0
// when the program's status is "ok", 1 otherwise.
#include <iostream>

#include "apps/cli/cli.h"
#include "sandbox/report_json.h"
#include "sandbox/sandbox.h"
#include "util/error.h"
#include "util/fs.h"

namespace rlf::cli {

CommandSpec make_exec_command() {
  CommandSpec cmd;
  cmd.name = "exec";
  cmd.summary = "run one program in the sandbox and print its result as JSON";
  cmd.usage = "FILE";
  cmd.n_positional_min = 1;
  cmd.n_positional_max = 1;
  cmd.options = {
      {"lang", OptKind::String, "python", "language of FILE (only 'python')", "LANG"},
      {"timeout", OptKind::Float, "10", "wall-clock limit, seconds", "S", 0.001, 86400},
      {"memory-mb", OptKind::Int, "512", "address-space limit, MiB", "N", 32, 16777216},
      {"max-output-bytes", OptKind::Int, "1048576", "stdout + stderr cap; the run is killed past it", "N", 1, 1e12},
  };
  cmd.run = [](const Args& args) {
    check(args.str("lang") == "python", "--lang: only 'python' is supported, got '", args.str("lang"), "'");
    sandbox::SandboxOptions options;
    options.timeout_s = args.number("timeout");
    options.memory_mb = args.integer("memory-mb");
    options.max_output_bytes = args.integer("max-output-bytes");
    sandbox::validate(options);
    std::string source = read_file(args.positional().at(0));
    sandbox::ExecResult result = sandbox::run_python(source, options);
    std::cout << json_line(sandbox::to_json(result)) << "\n";
    return result.status == sandbox::ExecStatus::ok ? 0 : 1;
  };
  return cmd;
}

}  // namespace rlf::cli

// `rlf verify code --data FILE`: runs a code dataset's reference solutions
// (HumanEval canonical_solution, MBPP code; detected by fields) against its
// tests in the sandbox, in parallel, and reports passed / total and the
// failures. Exits 0 when every reference passes, 1 otherwise.
#include <iostream>

#include "apps/cli/cli.h"
#include "sandbox/code_tests.h"
#include "sandbox/report_json.h"
#include "util/error.h"

namespace rlf::cli {

CommandSpec make_verify_code_command() {
  CommandSpec cmd;
  cmd.name = "verify code";
  cmd.summary = "run a HumanEval/MBPP file's reference solutions against its tests in the sandbox";
  cmd.options = {
      {"data", OptKind::String, "", "JSONL (or .jsonl.gz) of HumanEval or MBPP records", "PATH"},
      {"workers", OptKind::Int, "0", "programs run in parallel (0 = one per hardware thread)", "N", 0, 1024},
      {"timeout", OptKind::Float, "10", "wall-clock limit per program, seconds", "S", 0.001, 86400},
      {"memory-mb", OptKind::Int, "512", "address-space limit per program, MiB", "N", 32, 16777216},
      {"json", OptKind::Flag, "false", "print one JSON object instead of a summary", ""},
  };
  cmd.run = [](const Args& args) {
    check(!args.str("data").empty(), "verify code: --data PATH is required (a HumanEval or MBPP JSONL file)");
    sandbox::SandboxOptions options;
    options.timeout_s = args.number("timeout");
    options.memory_mb = args.integer("memory-mb");
    sandbox::validate(options);
    std::vector<sandbox::CodeTask> tasks = sandbox::load_code_tasks(args.str("data"));
    sandbox::VerifyReport report =
        sandbox::verify_references(tasks, options, static_cast<int>(args.integer("workers")));
    if (args.flag("json")) {
      std::cout << json_line(sandbox::to_json(report)) << "\n";
    } else {
      std::cout << report.passed << "/" << report.total << " reference solutions pass (" << report.wall_ms
                << " ms)\n";
      for (const sandbox::TaskFailure& f : report.failures) {
        std::cout << "  " << f.task_id << ": " << sandbox::status_name(f.result.status)
                  << (f.result.note.empty() ? "" : " (" + f.result.note + ")") << "\n";
      }
    }
    return report.passed == report.total ? 0 : 1;
  };
  return cmd;
}

}  // namespace rlf::cli

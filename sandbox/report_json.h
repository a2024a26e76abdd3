// JSON forms of the sandbox's results, as the `rlf exec`, `rlf verify code`
// and `rlf bench exec` commands print them (one object per command).
#pragma once

#include "sandbox/code_tests.h"
#include "sandbox/exec_bench.h"
#include "sandbox/sandbox.h"
#include "util/json_util.h"

namespace rlf::sandbox {

// {status, exit_code, signal, stdout, stderr, output_truncated, note, wall_ms, cpu_ms}
Json to_json(const ExecResult& result);

// {passed, total, pass_rate, wall_ms, failures: [{task_id, status, exit_code, note, stderr_tail}]}
Json to_json(const VerifyReport& report);

// {programs, workers, ok, wall_ms, programs_per_s, mean_run_ms}
Json to_json(const ExecBenchReport& report);

// One line of these: rlf::json_line (util/json_util.h) replaces invalid UTF-8
// in program output instead of failing.

}  // namespace rlf::sandbox

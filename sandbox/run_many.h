// Runs many programs in the sandbox on a pool of worker threads (each run is
// still its own jail); results come back in input order. Used by rewards to
// score a group of completions at once.
#pragma once

#include <string>
#include <vector>

#include "sandbox/sandbox.h"

namespace rlf::sandbox {

// The default worker count: the number of hardware threads (at least 1).
int default_workers();

// Runs every program with `options` on `n_workers` threads (0 = default_workers()).
// Checks the sandbox once up front (throws rlf::Error when the host cannot
// sandbox, or when n_workers < 0); per-program problems are in the results.
std::vector<ExecResult> run_many(const std::vector<std::string>& programs, const SandboxOptions& options,
                                 int n_workers = 0);

}  // namespace rlf::sandbox

// Process-wide settings applied once at the program's edge, from the common
// options: CPU threads (--threads; 0 = all cores, split between LibTorch and
// OpenBLAS by model/cpu_threads.h according to the compute dtype) and the
// device (--device).
#pragma once

#include <string>

#include "apps/cli/cli.h"
#include "model/cpu_threads.h"

namespace rlf::cli {

// Applies --threads for a model computing in `dtype` on `device`; returns the plan in effect.
CpuThreadPlan configure_threads(const Args& args, const std::string& dtype = "fp32", const std::string& device = "cpu");

// The value of a command's `--fast-cpu on|off` option (CausalLM::set_fast_cpu_path).
bool fast_cpu_option(const Args& args);

}  // namespace rlf::cli

// Process-wide settings applied once at the program's edge, from the common
// options: CPU threads (--threads; 0 = all cores, split between LibTorch and
// OpenBLAS by model/cpu_threads.h according to the compute dtype) and the
// device (--device).
#pragma once

#include <atomic>
#include <functional>
#include <optional>
#include <thread>
#include <string>

#include "apps/cli/cli.h"
#include "model/cpu_features.h"
#include "model/cpu_threads.h"
#include "setup/run_setup.h"
#include "util/json_util.h"

namespace rlf::cli {

// Applies --threads for a model computing in `dtype` on `device`; returns the
// plan in effect. Prints model/cpu_features.h's warning to stderr when the
// dtype is slow on this CPU (bf16 without AVX-512).
CpuThreadPlan configure_threads(const Args& args, const std::string& dtype = "fp32", const std::string& device = "cpu");

// --dtype with "auto" resolved for what the command does on --device
// (fast_dtype, model/cpu_features.h); checks the value names a dtype.
std::string command_dtype(const Args& args, DtypeUse use);

// The same with a thread count from a config file (0 = all cores).
CpuThreadPlan configure_threads(int threads, const std::string& dtype, const std::string& device);

// {"torch_threads", "blas_threads", "kernel_threads", "avx512", "avx512_bf16", "amx_bf16"}: the
// thread plan and the CPU features a benchmark ran with.
Json cpu_report(const CpuThreadPlan& plan);

// The policy a command's --model, --tokenizer, --adapter, --device and
// --pack-weights describe (rlf generate, rlf serve), computing in `dtype`.
PolicySpec policy_spec_of(const Args& args, const std::string& dtype);

// The value of a command's `--KEY on|off` option; anything else is an error
// naming the option.
bool on_off_option(const Args& args, const std::string& key);

// While it lives, SIGINT and SIGTERM (from whichever thread takes them) call
// `stop` once, on a watcher thread, instead of killing the process: servers
// use it to finish what they are doing and return from their run loop.
class StopOnSignal {
 public:
  explicit StopOnSignal(std::function<void()> stop);
  ~StopOnSignal();
  StopOnSignal(const StopOnSignal&) = delete;
  StopOnSignal& operator=(const StopOnSignal&) = delete;

 private:
  std::atomic<bool> done_{false};
  std::thread watcher_;
};

// An environment variable of this process (unset: nullopt). Only the CLI, the
// program's edge, reads the environment; libraries get this as an EnvLookup.
std::optional<std::string> read_process_env(const std::string& name);

}  // namespace rlf::cli

#include "apps/cli/runtime.h"

#include <signal.h>

#include <chrono>
#include <cstdlib>
#include <iostream>

#include "model/cpu_features.h"
#include "util/error.h"

namespace rlf::cli {

bool on_off_option(const Args& args, const std::string& key) {
  const std::string v = args.str(key);
  check(v == "on" || v == "off", "--", key, " must be on or off (got '", v, "')");
  return v == "on";
}

PolicySpec policy_spec_of(const Args& args, const std::string& dtype) {
  PolicySpec spec;
  spec.path = args.str("model");
  spec.tokenizer = args.str("tokenizer");
  spec.dtype = dtype;
  spec.device = args.str("device");
  spec.adapter = args.str("adapter");
  spec.adapter_key = "--adapter";
  spec.pack_weights = on_off_option(args, "pack-weights");
  return spec;
}

CpuThreadPlan configure_threads(int threads, const std::string& dtype, const std::string& device) {
  const std::string warning = dtype_speed_warning(dtype, device);
  if (!warning.empty()) std::cerr << warning << "\n";
  return configure_cpu_threads(threads, dtype, device);
}

std::string command_dtype(const Args& args, DtypeUse use) {
  const std::string v = args.str("dtype");
  check(v == "auto" || v == "fp32" || v == "bf16" || v == "fp16", "--dtype must be auto, fp32, bf16 or fp16 (got '", v,
        "')");
  return resolve_dtype(v, args.str("device"), use);
}

CpuThreadPlan configure_threads(const Args& args, const std::string& dtype, const std::string& device) {
  int64_t n = args.integer("threads");
  check(n >= 0, "--threads must be >= 0 (0 = all cores), got ", n);
  return configure_threads(static_cast<int>(n), dtype, device);
}

Json cpu_report(const CpuThreadPlan& plan) {
  const CpuFeatures f = cpu_features();
  return {{"torch_threads", plan.torch_threads}, {"blas_threads", plan.blas_threads},
          {"kernel_threads", plan.kernel_threads}, {"avx512", f.avx512},
          {"avx512_bf16", f.avx512_bf16}, {"amx_bf16", f.amx_bf16}};
}

std::optional<std::string> read_process_env(const std::string& name) {
  const char* v = std::getenv(name.c_str());
  return v ? std::optional<std::string>(v) : std::nullopt;
}

namespace {
// The one process-wide flag a signal handler may set.
volatile sig_atomic_t stop_signal_seen = 0;
extern "C" void on_stop_signal(int) { stop_signal_seen = 1; }
}  // namespace

StopOnSignal::StopOnSignal(std::function<void()> stop) {
  stop_signal_seen = 0;
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  watcher_ = std::thread([this, stop = std::move(stop)] {
    while (!done_) {
      if (stop_signal_seen) {
        stop();
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  });
}

StopOnSignal::~StopOnSignal() {
  done_ = true;
  watcher_.join();
  signal(SIGINT, SIG_DFL);
  signal(SIGTERM, SIG_DFL);
}

}  // namespace rlf::cli

#include "apps/cli/runtime.h"

#include "util/error.h"

namespace rlf::cli {

bool fast_cpu_option(const Args& args) {
  const std::string v = args.str("fast-cpu");
  check(v == "on" || v == "off", "--fast-cpu must be on or off (got '", v, "')");
  return v == "on";
}

CpuThreadPlan configure_threads(const Args& args, const std::string& dtype, const std::string& device) {
  int64_t n = args.integer("threads");
  check(n >= 0, "--threads must be >= 0 (0 = all cores), got ", n);
  return configure_cpu_threads(static_cast<int>(n), dtype, device);
}

}  // namespace rlf::cli

#include "util/memory_usage.h"

#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <string>

namespace rlf {
namespace {

// A "Name:   1234 kB" line of /proc/self/status, in MB.
double status_mb(const std::string& name) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.compare(0, name.size() + 1, name + ":") != 0) continue;
    try {
      return std::stod(line.substr(name.size() + 1)) * 1024.0 / 1e6;
    } catch (...) {
      return 0;
    }
  }
  return 0;
}

}  // namespace

void PeakRss::begin() {
  std::ofstream out("/proc/self/clear_refs");
  out << "5";
  out.flush();
  resets_work_ = static_cast<bool>(out);
}

double PeakRss::peak_mb() const { return status_mb("VmHWM"); }

double current_rss_mb() { return status_mb("VmRSS"); }

int64_t usable_memory_bytes() {
  int64_t bytes = static_cast<int64_t>(sysconf(_SC_PHYS_PAGES)) * static_cast<int64_t>(sysconf(_SC_PAGE_SIZE));
  for (const char* path : {"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"}) {
    std::ifstream in(path);
    std::string text;
    if (!(in >> text) || text == "max") continue;
    try {
      const int64_t limit = std::stoll(text);
      if (limit > 0) bytes = std::min(bytes, limit);
    } catch (...) {
    }
  }
  return bytes;
}

}  // namespace rlf

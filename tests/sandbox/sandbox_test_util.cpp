#include "tests/sandbox/sandbox_test_util.h"

#include <unistd.h>

#include <fstream>
#include <random>
#include <sstream>

namespace rlf::sandbox::testing {

namespace fs = std::filesystem;

std::string unique_marker() {
  std::random_device rd;
  return "rlfmark_" + std::to_string(getpid()) + "_" + std::to_string(rd());
}

std::vector<std::string> leftover_processes(const std::string& marker) {
  UidRange range = sandbox_uid_range();
  std::vector<std::string> found;
  for (const auto& entry : fs::directory_iterator("/proc")) {
    std::string pid = entry.path().filename().string();
    if (pid.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream cmdline_file(entry.path() / "cmdline");
    std::string cmdline((std::istreambuf_iterator<char>(cmdline_file)), std::istreambuf_iterator<char>());
    bool hit = cmdline.find(marker) != std::string::npos;
    std::ifstream status(entry.path() / "status");
    for (std::string line; std::getline(status, line);) {
      if (line.rfind("Uid:", 0) != 0) continue;
      std::istringstream fields(line.substr(4));
      uint64_t uid = 0;
      fields >> uid;
      hit = hit || (uid >= range.first && uid <= range.last);
    }
    if (hit) found.push_back(pid + ": " + cmdline);
  }
  return found;
}

std::vector<std::string> dir_entries(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir)) names.push_back(entry.path().filename().string());
  return names;
}

}  // namespace rlf::sandbox::testing

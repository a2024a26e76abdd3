#include "tests/support/test_env.h"

#include <gtest/gtest.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <thread>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>

namespace rlf::test {

namespace fs = std::filesystem;

static std::string env_or(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return (v && *v) ? std::string(v) : fallback;
}

fs::path shared_path(const std::string& rel) { return fs::path(env_or("RLF_SHARED", RLF_DEFAULT_SHARED)) / rel; }
fs::path source_path(const std::string& rel) { return fs::path(env_or("RLF_SOURCE_DIR", RLF_DEFAULT_SOURCE_DIR)) / rel; }
fs::path binary_path(const std::string& rel) { return fs::path(env_or("RLF_BINARY_DIR", RLF_DEFAULT_BINARY_DIR)) / rel; }

std::string oracle_python() {
  std::string p = env_or("RLF_ORACLE_PYTHON", RLF_DEFAULT_ORACLE_PYTHON);
  if (p.empty() || !fs::exists(p)) return "";
  return p;
}

std::string peer_python() {
  std::string p = env_or("RLF_PEER_PYTHON", RLF_DEFAULT_PEER_PYTHON);
  if (p.empty() || !fs::exists(p)) return "";
  return p;
}

TempDir::TempDir() {
  std::random_device rd;
  std::mt19937_64 gen(rd());
  for (int attempt = 0; attempt < 100; ++attempt) {
    fs::path p = fs::temp_directory_path() / ("rlf-test-" + std::to_string(gen()));
    std::error_code ec;
    if (fs::create_directory(p, ec)) {
      path_ = p;
      return;
    }
  }
  throw std::runtime_error("cannot create a temporary directory");
}

TempDir::~TempDir() {
  std::error_code ec;
  fs::remove_all(path_, ec);
}

std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') out += "'\\''";
    else out += c;
  }
  return out + "'";
}

CommandResult run_command(const std::string& command) {
  CommandResult r;
  std::string full = command + " 2>&1";
  FILE* pipe = popen(full.c_str(), "r");
  if (!pipe) return r;
  std::array<char, 4096> buf{};
  size_t n = 0;
  while ((n = fread(buf.data(), 1, buf.size(), pipe)) > 0) r.output.append(buf.data(), n);
  int status = pclose(pipe);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

CommandResult run_oracle_python(const std::string& python_source, const std::string& args) {
  TempDir dir;
  fs::path script = dir / "oracle.py";
  std::ofstream(script) << python_source;
  CommandResult r = run_command(shell_quote(oracle_python()) + " " + shell_quote(script.string()) + " " + args);
  if (r.exit_code != 0) ADD_FAILURE() << "oracle script failed (exit " << r.exit_code << "):\n" << r.output;
  return r;
}

namespace {
// A /proc file's text ("" when the process is gone: its files then fail to read).
std::string read_proc_file(const fs::path& path) {
  std::string text;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return text;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(fd, buf, sizeof(buf))) > 0) text.append(buf, static_cast<size_t>(n));
  ::close(fd);
  return n < 0 ? std::string() : text;
}
}  // namespace

std::vector<int> processes_with(const std::string& token) {
  std::vector<int> out;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    if (read_proc_file(entry.path() / "cmdline").find(token) == std::string::npos) continue;
    const std::string stat = read_proc_file(entry.path() / "stat");
    const size_t close = stat.rfind(')');
    if (close == std::string::npos || close + 2 >= stat.size() || stat[close + 2] == 'Z') continue;
    out.push_back(std::stoi(name));
  }
  return out;
}

std::vector<int> wait_until_gone(const std::string& token, double timeout_s) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  std::vector<int> left = processes_with(token);
  while (!left.empty() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    left = processes_with(token);
  }
  return left;
}

std::vector<int> wait_until_present(const std::string& token, double timeout_s) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  std::vector<int> found = processes_with(token);
  while (found.empty() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    found = processes_with(token);
  }
  return found;
}

void kill_leftovers(const std::vector<int>& pids) {
  for (int pid : pids) {
    if (::getpgid(pid) == pid) ::kill(-pid, SIGKILL);
    ::kill(pid, SIGKILL);
  }
}

int spawn_logged(const std::vector<std::string>& args, const std::filesystem::path& out, bool with_stderr) {
  std::vector<std::string> copy = args;
  std::vector<char*> argv;
  for (auto& a : copy) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (with_stderr) posix_spawn_file_actions_adddup2(&actions, 1, 2);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, copy[0].c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) {
    ADD_FAILURE() << "could not start " << copy[0] << ": " << std::strerror(rc);
    return -1;
  }
  return pid;
}

std::string unique_token(const std::string& prefix) {
  std::random_device rd;
  return prefix + "-" + std::to_string(getpid()) + "-" + std::to_string(rd()) + std::to_string(rd());
}

}  // namespace rlf::test

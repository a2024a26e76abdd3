// Test environment: where shared/ data lives, the oracle Python interpreter,
// and small helpers shared by every suite.
//
// Defaults are compiled in from CMake (RLF_SHARED_DIR, RLF_ORACLE_PYTHON: the
// virtual environment with transformers/tokenizers/math-verify that
// scripts/test.sh creates, RLF_PEER_PYTHON: today's peers); the environment
// variables RLF_SHARED, RLF_ORACLE_PYTHON, RLF_PEER_PYTHON, RLF_BINARY_DIR and
// RLF_SOURCE_DIR override them. Tests that need the oracle call
// require_oracle(): it skips when no interpreter is configured, unless
// RLF_REQUIRE_ORACLE=1 (set by scripts/test.sh), in which case it fails, so CI
// can never silently skip an outside reference.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "util/error.h"

namespace rlf::test {

// Path inside shared/, e.g. shared_path("models/stories260K/stories260K.bin").
std::filesystem::path shared_path(const std::string& rel);

// Path inside the source tree / build tree.
std::filesystem::path source_path(const std::string& rel);
std::filesystem::path binary_path(const std::string& rel);

// The oracle interpreter, or "" when none is configured.
std::string oracle_python();

// The interpreter of today's peers (torch 2.x, transformers 5.x, peft: the
// environment scripts/peer_venv.sh creates; CMake's RLF_PEER_PYTHON, or the
// RLF_PEER_PYTHON environment variable), or "" when none is configured.
std::string peer_python();

// A fresh temporary directory, removed when the object dies.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& rel) const { return path_ / rel; }

 private:
  std::filesystem::path path_;
};

struct CommandResult {
  int exit_code = -1;
  std::string output;  // stdout and stderr together
};

// Runs a shell command, capturing stdout+stderr.
CommandResult run_command(const std::string& command);

// Runs `python_source` with the oracle interpreter and the given arguments
// (each shell-quoted). Fails the test (ADD_FAILURE) on a non-zero exit.
CommandResult run_oracle_python(const std::string& python_source, const std::string& args = "");

// Quotes one argument for /bin/sh.
std::string shell_quote(const std::string& s);

// Runs `fn` and returns the message of the rlf::Error it throws; fails the
// test when it throws nothing or another exception.
inline std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "threw a non-rlf exception: " << e.what();
    return "";
  }
  ADD_FAILURE() << "did not throw";
  return "";
}

// Live (not zombie) processes whose command line contains `token`, by their
// pid in our PID namespace: finds a program's descendants wherever they run
// (a program in a PID namespace of its own knows them by other pids).
std::vector<int> processes_with(const std::string& token);
// Waits up to timeout_s for every process carrying `token` to end; returns the ones still alive.
std::vector<int> wait_until_gone(const std::string& token, double timeout_s);
// The processes carrying `token`, polled until there is one or `timeout_s` passes (a process another
// one just started can take a moment to appear under load).
std::vector<int> wait_until_present(const std::string& token, double timeout_s);
// SIGKILL to each of `pids` and to the process group each one leads (what a
// failed test left behind, so one failure does not leak processes).
void kill_leftovers(const std::vector<int>& pids);
// A token no other process carries (for processes_with).
std::string unique_token(const std::string& prefix);
// Starts args[0] (a path) with args, its stdout written to `out` (created or
// truncated), stderr too when `with_stderr`; returns its pid, or -1 after
// recording a test failure. The caller waits for it.
int spawn_logged(const std::vector<std::string>& args, const std::filesystem::path& out, bool with_stderr);

}  // namespace rlf::test

// Skips the current test when the peers' Python is missing (fails instead when
// RLF_REQUIRE_ORACLE=1).
#define RLF_REQUIRE_PEER()                                                            \
  do {                                                                                \
    if (::rlf::test::peer_python().empty()) {                                         \
      const char* req = std::getenv("RLF_REQUIRE_ORACLE");                            \
      if (req && std::string(req) == "1") FAIL() << "peer Python (RLF_PEER_PYTHON) required but not configured"; \
      GTEST_SKIP() << "no peer Python (bash scripts/peer_venv.sh; configure with -DRLF_PEER_PYTHON=...)"; \
    }                                                                                 \
  } while (0)

// Skips the current test when the oracle Python is missing (fails instead when
// RLF_REQUIRE_ORACLE=1).
#define RLF_REQUIRE_ORACLE()                                                          \
  do {                                                                                \
    if (::rlf::test::oracle_python().empty()) {                                       \
      const char* req = std::getenv("RLF_REQUIRE_ORACLE");                            \
      if (req && std::string(req) == "1") FAIL() << "oracle Python required but not configured"; \
      GTEST_SKIP() << "no oracle Python (run scripts/test.sh to create it)";          \
    }                                                                                 \
  } while (0)

// Helpers shared by the sandbox suites: a unique marker per test, and host-side
// checks that a run left nothing behind (processes, files, mount points).
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "sandbox/sandbox.h"

namespace rlf::sandbox::testing {

// "rlfmark_<pid>_<random>": embedded in attack programs and their children's argv.
std::string unique_marker();

// Pids of live processes whose cmdline contains `marker`, or whose uid lies in
// this process's sandbox uid range. Empty when the host is clean.
std::vector<std::string> leftover_processes(const std::string& marker);

// Entries of `dir` (the host_tmp_dir of the runs): must be empty afterwards.
std::vector<std::string> dir_entries(const std::filesystem::path& dir);

// Asserts the message of the rlf::Error thrown by `fn` contains `expected`.
template <typename Fn>
void expect_error_containing(Fn&& fn, const std::string& expected) {
  try {
    fn();
    ADD_FAILURE() << "expected an error containing: " << expected;
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find(expected), std::string::npos)
        << "message: " << e.what() << "\nexpected to contain: " << expected;
  }
}

}  // namespace rlf::sandbox::testing

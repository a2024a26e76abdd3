// Small helpers shared by the data tests: writing JSONL fixtures and
// asserting exact error texts.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "tests/support/test_env.h"
#include "util/error.h"
#include "util/fs.h"

namespace rlf::test {

// Writes `text` to dir/name and returns the path.
inline std::string write_fixture(const TempDir& dir, const std::string& name, const std::string& text) {
  std::string path = (dir / name).string();
  write_file_atomic(path, text);
  return path;
}


}  // namespace rlf::test

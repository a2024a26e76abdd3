// Runs a shipped example as a user does — `rlf train examples/X.toml --json
// [--set ...]` — and returns its summary (the last line of the output),
// printed without last_metrics for the test log.
#pragma once

#include <gtest/gtest.h>

#include <iostream>
#include <string>

#include "tests/support/test_env.h"
#include "util/fs.h"
#include "util/json_util.h"

namespace rlf::test {

// `sets`: extra " --set KEY=VALUE" arguments (shell-quoted by the caller where needed).
inline Json train_example(const std::string& example, const std::string& sets, const std::string& label) {
  auto r = run_command(shell_quote(binary_path("apps/cli/rlf").string()) + " train " +
                       shell_quote(source_path(example).string()) + " --json" + sets);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  auto lines = split_lines(r.output);
  if (r.exit_code != 0 || lines.empty()) return Json();
  Json s = Json::parse(lines.back());
  Json shown = s;
  shown.erase("last_metrics");
  std::cout << label << ": " << shown.dump() << "\n";
  return s;
}

}  // namespace rlf::test

// The `code` reward: runs each completion against the record's unit tests in
// the sandbox (sandbox/run_many.h), `workers` programs at a time.
//
// The record decides the harness (sandbox/code_tests.h):
//   HumanEval  fields prompt, test, entry_point: program = record prompt +
//              completion + test + check(entry_point)
//   MBPP       field test_list (optional test_setup_code): program =
//              completion + setup + the asserts
// When the completion holds a markdown code fence, the code is taken from
// the first ```python (or ```py) fence, else the first untagged one; an
// unclosed fence runs to the end of the text.
//
// Score: 1 when the program exits 0 (all tests pass), else 0. With
// partial_credit, an MBPP record scores the fraction of its asserts that pass
// (each assert runs as its own program after the solution). A sandbox that
// cannot be set up for one run makes that sample missing (not the model's
// fault); a host that cannot sandbox at all is an error at construction.
// Explanation: "passed", or the status and the last lines of stderr
// ("failed (exit 1): AssertionError"), where Python puts the exception.
#pragma once

#include <cstdint>
#include <string>

#include "rewards/reward.h"
#include "rewards/reward_options.h"
#include "sandbox/code_tests.h"
#include "sandbox/sandbox.h"

namespace rlf {

struct CodeRewardOptions {
  int64_t workers = 0;          // sandboxed programs run in parallel; 0 = one per hardware thread
  double timeout_s = 10.0;      // wall-clock limit of one test program, seconds
  int64_t memory_mb = 512;      // address-space limit of one test program, MiB
  bool extract_code = true;     // take the code from a markdown fence when the completion has one
  bool partial_credit = false;  // MBPP only: score = fraction of asserts passing (one run per assert)
  int64_t stderr_lines = 3;     // lines of stderr (the last ones) quoted in the explanation
  std::string python = "/usr/bin/python3";  // interpreter in the sandbox (must live under /usr)
};

void validate(const CodeRewardOptions& options);
CodeRewardOptions read_code_options(OptionReader& reader);

// The code inside the completion's markdown fence (see above), or the whole
// completion when it has none.
std::string extract_code_block(const std::string& completion);

// The HumanEval or MBPP task a record describes; throws naming `where` when
// the record has no tests.
sandbox::CodeTask code_task_from_record(const Json& record, const std::string& where);

class CodeReward : public Reward {
 public:
  // Checks that the sandbox works on this host (throws rlf::Error with the
  // reason and a hint when it does not).
  explicit CodeReward(CodeRewardOptions options = {});
  std::string name() const override { return "code"; }
  std::vector<RewardResult> score(const RewardGroup& group) override;
  void check_record(const Json& record, const std::string& reference, const std::string& where) const override;

 private:
  CodeRewardOptions options_;
  sandbox::SandboxOptions sandbox_;
};

}  // namespace rlf

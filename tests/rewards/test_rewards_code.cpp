// The code reward on real HumanEval records (shared/data/humaneval) and a
// small MBPP-style record: right and wrong completions, markdown fences,
// timeouts, partial credit, and records without tests.
#include <gtest/gtest.h>

#include "rewards/code_reward.h"
#include "tests/rewards/reward_test_util.h"
#include "tests/support/test_env.h"
#include "util/fs.h"

namespace rlf {
namespace {

using test::error_of;
using test::make_group;

// The first `n` HumanEval records.
std::vector<Json> humaneval_records(size_t n) {
  std::string path = test::shared_path("data/humaneval/HumanEval.jsonl.gz").string();
  std::vector<Json> out;
  for (const std::string& line : split_lines(read_file_maybe_gz(path))) {
    if (out.size() == n) break;
    out.push_back(parse_json(line, path));
  }
  return out;
}

CodeRewardOptions fast_options() {
  CodeRewardOptions o;
  o.workers = 2;
  o.timeout_s = 3.0;
  return o;
}

TEST(CodeReward, HumanEvalRightAndWrongCompletions) {
  CodeReward reward(fast_options());
  std::vector<Json> records = humaneval_records(3);
  for (const Json& record : records) {
    const std::string canonical = record["canonical_solution"].get<std::string>();
    RewardGroup g = make_group({canonical,                                      // right
                                "    return None\n",                            // wrong
                                "Here it is:\n```python\n" + record["prompt"].get<std::string>() + canonical +
                                    "```\nDone.",                              // right, whole function in a fence
                                "    return (\n"},                              // syntax error
                               record);
    auto r = reward.score(g);
    SCOPED_TRACE(record["task_id"].get<std::string>());
    EXPECT_EQ(r[0].score, 1.0);
    EXPECT_EQ(r[0].explanation, "passed");
    EXPECT_EQ(r[1].score, 0.0);
    EXPECT_EQ(r[1].explanation.rfind("failed (exit 1): ", 0), 0u) << r[1].explanation;
    EXPECT_EQ(r[2].score, 1.0) << r[2].explanation;
    EXPECT_EQ(r[3].score, 0.0);
    EXPECT_NE(r[3].explanation.find("SyntaxError"), std::string::npos) << r[3].explanation;
    EXPECT_EQ(r[3].explanation.find("^"), std::string::npos) << "caret lines are dropped: " << r[3].explanation;
  }
  // The explanation ends with Python's exception line (the tail of stderr).
  RewardGroup g = make_group({"    return None\n"}, records[2]);  // truncate_number: check() asserts on floats
  EXPECT_NE(reward.score(g)[0].explanation.find("AssertionError"), std::string::npos);
}

TEST(CodeReward, ExitingBeforeTheTestsIsAFailure) {
  // A completion that leaves before the appended tests run (exit code 0)
  // must not pass: the reward requires the end-of-tests sentinel.
  CodeReward reward(fast_options());
  Json record = humaneval_records(1)[0];
  const std::string canonical = record["canonical_solution"].get<std::string>();
  auto r = reward.score(make_group({"    return None\nimport sys\nsys.exit(0)\n", "    return None\nimport os\nos._exit(0)\n",
                                    canonical + "\nprint('rlf-tests-finished-0123')\nimport sys\nsys.exit(0)\n", canonical},
                                   record));
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(r[i].score, 0.0) << i;
    EXPECT_NE(r[i].explanation.find("before the tests finished"), std::string::npos) << r[i].explanation;
  }
  EXPECT_EQ(r[3].score, 1.0) << r[3].explanation;
}

TEST(CodeReward, TimeoutsAndPartialCredit) {
  CodeRewardOptions o = fast_options();
  o.timeout_s = 1.0;
  Json mbpp = {{"task_id", 7},
               {"text", "add two numbers"},
               {"test_list", {"assert add(1, 2) == 3", "assert add(2, 2) == 4", "assert add(0, 0) == 1"}}};
  auto r = CodeReward(o).score(make_group({"def add(a, b):\n    return a + b\n", "while True:\n    pass\n"}, mbpp));
  EXPECT_EQ(r[0].score, 0.0);  // one assert fails: no credit without partial_credit
  EXPECT_EQ(r[1].score, 0.0);
  EXPECT_EQ(r[1].explanation.rfind("timeout (", 0), 0u) << r[1].explanation;

  o.partial_credit = true;
  r = CodeReward(o).score(make_group({"def add(a, b):\n    return a + b\n", "```py\ndef add(a, b):\n    return 1\n```"},
                                     mbpp));
  EXPECT_DOUBLE_EQ(*r[0].score, 2.0 / 3.0);
  EXPECT_EQ(r[0].explanation.rfind("2/3 asserts passed; first failure: assert add(0, 0) == 1 -> failed (exit 1): ", 0),
            0u)
      << r[0].explanation;
  EXPECT_DOUBLE_EQ(*r[1].score, 1.0 / 3.0);
}

TEST(CodeReward, CodeFences) {
  EXPECT_EQ(extract_code_block("no fence"), "no fence");
  EXPECT_EQ(extract_code_block("a\n```\nplain\n```\nb\n```python\nx = 1\n```"), "x = 1\n");
  EXPECT_EQ(extract_code_block("```\nplain\n```\n```js\nlet x\n```"), "plain\n");
  EXPECT_EQ(extract_code_block("```python \ncut off"), "cut off");
  EXPECT_EQ(extract_code_block("```js\nlet x\n```"), "```js\nlet x\n```");
}

TEST(CodeReward, RecordsWithoutTests) {
  CodeReward reward(fast_options());
  EXPECT_EQ(error_of([&] { reward.check_record({{"question", "write a sort"}}, "", "code.jsonl:12"); }),
            "code.jsonl:12: code reward needs tests, but the record has neither HumanEval fields (prompt, test, "
            "entry_point) nor an MBPP 'test_list'");
  EXPECT_EQ(error_of([&] { reward.check_record({{"test_list", Json::array()}}, "", "code.jsonl:13"); }),
            "code.jsonl:13: code reward: MBPP record has no tests (field 'test_list' is empty)");
  EXPECT_EQ(error_of([&] {
              reward.check_record({{"prompt", "def f():\n"}, {"entry_point", "f"}, {"test", " "}}, "", "code.jsonl:14");
            }),
            "code.jsonl:14: code reward: HumanEval record has no tests (field 'test' is missing or empty)");
  CodeRewardOptions missing_python;
  missing_python.python = "/usr/bin/python-missing";
  EXPECT_EQ(error_of([&] { CodeReward r(missing_python); }),
            "code reward: the sandbox cannot run on this host: sandbox: Python interpreter '/usr/bin/python-missing' "
            "not found or not executable (install Debian's python3, or set the python option)");
  CodeRewardOptions o;
  o.workers = -1;
  EXPECT_EQ(error_of([&] { CodeReward r(o); }),
            "option 'workers' is -1; use a count >= 1, or 0 for one per hardware thread");
}

}  // namespace
}  // namespace rlf

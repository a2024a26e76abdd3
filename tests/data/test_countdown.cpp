// The countdown verifier: valid and invalid expressions, number reuse,
// division by zero, fractional intermediates (allowed, exact), bounds, and
// exact values against Python's fractions.Fraction (oracle Python).
#include <gtest/gtest.h>

#include "data/countdown.h"
#include "data/seeded_rng.h"
#include "tests/support/test_env.h"
#include "util/fs.h"

namespace rlf {
namespace {

const CountdownProblem kProblem{{50, 25, 7, 3}, 82};

std::string reason(std::string_view expr, const CountdownProblem& p = kProblem) {
  CountdownVerdict v = verify_countdown(expr, p);
  EXPECT_FALSE(v.correct) << expr;
  return v.reason;
}

TEST(Countdown, AcceptsCorrectExpressions) {
  for (const char* expr : {"50 + 25 + 7", "(50 + 25) + 7", "7 + 25 + 50", "50+25+7", " ((50) + (25 + 7)) ",
                           "(50 - 25) * 3 + 7"}) {
    CountdownVerdict v = verify_countdown(expr, kProblem);
    EXPECT_TRUE(v.correct) << expr << ": " << v.reason;
    EXPECT_EQ(v.value, "82");
    EXPECT_EQ(v.reason, "equals the target 82");
  }
}

TEST(Countdown, RejectsWrongValueAndForeignOrReusedNumbers) {
  EXPECT_EQ(reason("50 + 25"), "evaluates to 75, not the target 82");
  EXPECT_EQ(reason("50 + 25 + 7 + 7 - 7"), "number 7 is used more times than it is given");
  EXPECT_EQ(reason("50 + 25 + 7 * 3 - 3 * 7"), "number 3 is used more times than it is given");
  EXPECT_EQ(reason("50 + 32"), "number 32 is not one of the given numbers");
  EXPECT_EQ(reason("82"), "number 82 is not one of the given numbers");
  // A number given twice may be used twice.
  EXPECT_TRUE(verify_countdown("5 * 5 - 1", {{5, 5, 1}, 24}).correct);
  EXPECT_EQ(reason("5 * 5 - 1 + 5 - 5", {{5, 5, 1}, 24}), "number 5 is used more times than it is given");
}

TEST(Countdown, DivisionExactOverTheRationals) {
  EXPECT_EQ(reason("50 / (25 - 25)", {{50, 25, 25}, 1}), "division by zero");
  EXPECT_EQ(reason("7 / (3 - 3)", {{7, 3, 3}, 1}), "division by zero");
  // Fractional intermediates are allowed: 6 / (1 - 3/4) = 24.
  CountdownVerdict v = verify_countdown("6 / (1 - 3 / 4)", {{6, 1, 3, 4}, 24});
  EXPECT_TRUE(v.correct) << v.reason;
  // A fractional final value is never an integer target.
  v = verify_countdown("7 / 2", {{7, 2}, 3});
  EXPECT_FALSE(v.correct);
  EXPECT_EQ(v.value, "7/2");
  EXPECT_EQ(v.reason, "evaluates to 7/2, not the target 3");
  EXPECT_EQ(verify_countdown("3 - 7", {{3, 7}, -4}).value, "-4");
}

TEST(Countdown, RejectsMalformedInput) {
  EXPECT_EQ(reason(""), "empty expression");
  EXPECT_EQ(reason("   "), "empty expression");
  EXPECT_EQ(reason("-7 + 50 + 25 + 3"), "unexpected '-' at offset 0 (unary minus is not allowed)");
  EXPECT_EQ(reason("50 + x"), "unexpected 'x' at offset 5");
  EXPECT_EQ(reason("50 + "), "unexpected end of expression");
  EXPECT_EQ(reason("(50 + 25"), "unexpected end of expression");
  EXPECT_EQ(reason("50 + 25)"), "unexpected ')' at offset 7");
  EXPECT_EQ(reason("50 ^ 2"), "unexpected '^' at offset 3");
  EXPECT_EQ(reason("50 25"), "unexpected '2' at offset 3");
  EXPECT_EQ(reason("99999999999999999999"), "a number in the expression is too large");
  EXPECT_EQ(reason(std::string(2000, '(')), "expression longer than 1000 bytes");
  EXPECT_EQ(reason(std::string(100, '(') + "50" + std::string(100, ')')), "parentheses nested deeper than 64");
  CountdownProblem big{{1000000000, 1000000000, 1000000000, 1000000000, 1000000000}, 1};
  EXPECT_EQ(reason("1000000000 * 1000000000 * 1000000000", big), "a value overflows 64-bit arithmetic");
}

TEST(Countdown, AnswerExtraction) {
  EXPECT_EQ(countdown_answer("50 + 25 = 75. 75 + 7 = 82. #### (50 + 25) + 7"), "(50 + 25) + 7");
  EXPECT_EQ(countdown_answer("#### 1\nthen #### 50 + 25 + 7 = 82\nmore text"), "50 + 25 + 7");
  EXPECT_EQ(countdown_answer("no answer here"), "");
  EXPECT_EQ(countdown_problem_from_record({{"numbers", {1, 2}}, {"target", 3}}, "r").numbers.size(), 2u);
  try {
    countdown_problem_from_record({{"numbers", {1, 2.5}}, {"target", 3}}, "'f' line 2");
    FAIL();
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "'f' line 2: 'numbers' holds a non-integer value 2.5");
  }
}

// A random expression over the numbers of `pool`, each used at most once.
std::string random_expression(SeededRng& rng, std::vector<int64_t>& pool, int depth) {
  if (depth == 0 || pool.size() == 1 || rng.below(3) == 0) {
    size_t i = rng.below(pool.size());
    int64_t n = pool[i];
    pool.erase(pool.begin() + static_cast<std::ptrdiff_t>(i));
    return std::to_string(n);
  }
  std::string a = random_expression(rng, pool, depth - 1);
  if (pool.empty()) return a;
  std::string b = random_expression(rng, pool, depth - 1);
  const char* ops = "+-*/";
  std::string e = a + " " + ops[rng.below(4)] + " " + b;
  return rng.below(2) ? "(" + e + ")" : e;
}

// Exact values against Python's fractions.Fraction evaluating the same text.
TEST(Countdown, ValuesMatchPythonFractions) {
  RLF_REQUIRE_ORACLE();
  const CountdownProblem problem{{1, 1, 2, 2, 3, 3, 4, 5, 6}, 10};
  SeededRng rng(17);
  Json cases = Json::array();
  std::vector<CountdownVerdict> verdicts;
  for (int i = 0; i < 400; ++i) {
    std::vector<int64_t> pool = problem.numbers;
    std::string expr = random_expression(rng, pool, 4);
    cases.push_back(expr);
    verdicts.push_back(verify_countdown(expr, problem));
  }
  test::TempDir dir;
  std::string path = (dir / "cases.json").string();
  write_file_atomic(path, cases.dump());
  auto result = test::run_oracle_python(R"(
import ast, json, sys
from fractions import Fraction
def ev(n):
    if isinstance(n, ast.Expression): return ev(n.body)
    if isinstance(n, ast.Constant): return Fraction(n.value)
    a, b = ev(n.left), ev(n.right)
    if isinstance(n.op, ast.Add): return a + b
    if isinstance(n.op, ast.Sub): return a - b
    if isinstance(n.op, ast.Mult): return a * b
    if b == 0: raise ZeroDivisionError
    return a / b
out = []
for e in json.load(open(sys.argv[1])):
    try: out.append(str(ev(ast.parse(e, mode="eval"))))
    except ZeroDivisionError: out.append("division by zero")
print("VALUES " + json.dumps(out))
)", test::shell_quote(path));
  ASSERT_EQ(result.exit_code, 0) << result.output;
  Json expected = Json::parse(result.output.substr(result.output.find("VALUES ") + 7));
  ASSERT_EQ(expected.size(), verdicts.size());
  size_t n_div0 = 0, n_fraction = 0;
  for (size_t i = 0; i < verdicts.size(); ++i) {
    std::string want = expected[i].get<std::string>();
    std::string got = verdicts[i].value.empty() ? verdicts[i].reason : verdicts[i].value;
    EXPECT_EQ(got, want) << cases[i].get<std::string>();
    EXPECT_EQ(verdicts[i].correct, want == "10");
    n_div0 += want == "division by zero";
    n_fraction += want.find('/') != std::string::npos;
  }
  EXPECT_GT(n_fraction, 20u);  // the cases exercise fractions and division by zero
  EXPECT_GT(n_div0, 0u);
}

}  // namespace
}  // namespace rlf

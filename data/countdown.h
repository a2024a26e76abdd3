// Countdown: given numbers and a target, write an arithmetic expression that
// reaches the target. The verifier is the reward for this task.
//
// Rules (verify_countdown):
//   - the expression uses integers, + - * /, parentheses and spaces only;
//     unary minus and other characters are rejected;
//   - every number in it is one of the given numbers, each given number used
//     at most once (a number given twice may be used twice); not every
//     number has to be used;
//   - it is evaluated exactly over the rationals: fractional intermediates
//     are allowed ("6 / (1 - 3 / 4)" is 24), division by zero is invalid,
//     and a value that overflows 64-bit numerator/denominator is invalid;
//   - it is correct when its value equals the target exactly.
// Inputs are bounded (kMaxExpressionLength bytes, kMaxDepth nested
// parentheses), so the verifier never throws and never recurses deeply.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "util/json_util.h"

namespace rlf {

struct CountdownProblem {
  std::vector<int64_t> numbers;  // the numbers that may be used, each at most once
  int64_t target = 0;            // the value to reach
};

struct CountdownVerdict {
  bool correct = false;
  std::string value;   // the expression's exact value ("82", "163/2"); "" when it has none
  std::string reason;  // one line: why it is (not) correct
};

inline constexpr size_t kMaxExpressionLength = 1000;
inline constexpr int kMaxDepth = 64;

// Checks `expression` against `problem` (rules above). Never throws.
CountdownVerdict verify_countdown(std::string_view expression, const CountdownProblem& problem);

// The exact value of an arithmetic expression under the same rules as
// verify_countdown but without the number restriction (any non-negative
// integers, any number of times): integers, + - * /, parentheses, evaluated
// over the rationals. Used by the calculator tool (env/calculator_env.h).
// Never throws.
struct ExactValue {
  bool ok = false;
  std::string value;   // "82", "163/2" (when ok)
  std::string reason;  // why there is no value (when !ok)
};
ExactValue evaluate_exact(std::string_view expression);

// The expression a completion answers with: the text after the last "####"
// up to the end of that line, trimmed; when it holds "=", the part before
// the first "=" ("25 + 7 = 32" -> "25 + 7"). "" when there is no "####".
std::string countdown_answer(std::string_view completion);

// The problem stored in a countdown record ({"numbers": [...], "target": n});
// throws rlf::Error naming `where` when the fields are missing or not integers.
CountdownProblem countdown_problem_from_record(const Json& record, const std::string& where);

}  // namespace rlf

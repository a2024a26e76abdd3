// Math answer verification: the entry points a reward uses.
//
//   verify_math(model_output, reference_answer) finds the final answer in the
//   model's text (answer_extract.h), normalises both sides
//   (latex_normalize.h), parses them (math_answer.h) and decides equivalence.
//   The verdict carries what was extracted and a one-line reason, so a reward
//   can explain itself.
//
// Guarantees: never throws, never crashes or hangs on any input (length,
// nesting and work are bounded); a pair it cannot decide is "not correct"
// with a reason. Deterministic: the same pair always gets the same verdict.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "rewards/math/answer_extract.h"
#include "rewards/math/math_answer.h"

namespace rlf::math {

struct VerifyOptions {
  AnswerFormat format = AnswerFormat::Auto;  // where to find the answer in the prediction text
  CompareOptions compare;                    // tolerance and sample points
  size_t max_text_length = 1 << 20;          // bytes of prediction text searched; longer is cut at the end kept
};

struct MathVerdict {
  bool correct = false;
  std::string extracted;  // the answer found in the prediction ("" when none)
  std::string reason;     // why it is (not) correct, one line
};

// Checks a model's whole output against a reference final answer (which may
// itself be "\boxed{...}" or "#### n"; it is extracted first when it is).
MathVerdict verify_math(std::string_view prediction_text, std::string_view reference_answer, const VerifyOptions& options = {});

// True when two final answers (already extracted) are the same; `reason`
// says why not.
bool math_equal(std::string_view prediction_answer, std::string_view reference_answer, std::string* reason = nullptr,
                const CompareOptions& options = {});

}  // namespace rlf::math

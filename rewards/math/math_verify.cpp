#include "rewards/math/math_verify.h"

#include <exception>

#include "rewards/math/latex_normalize.h"

namespace rlf::math {
namespace {

// A reference given as a whole "#### n" line or a boxed answer: take the answer out.
std::string reference_final_answer(std::string_view reference) {
  if (reference.find("\\boxed") != std::string_view::npos || reference.find("\\fbox") != std::string_view::npos) {
    if (auto a = extract_boxed(reference)) return *a;
  }
  if (reference.find("####") != std::string_view::npos) {
    if (auto a = extract_answer(reference, AnswerFormat::Gsm8k)) return *a;
  }
  return std::string(reference);
}

}  // namespace

bool math_equal(std::string_view prediction_answer, std::string_view reference_answer, std::string* reason,
                const CompareOptions& options) {
  try {
    std::string p = normalize_answer(prediction_answer), r = normalize_answer(reference_answer);
    if (r.empty()) {
      if (reason) *reason = "empty reference answer";
      return false;
    }
    if (p.empty()) {
      if (reason) *reason = "empty answer";
      return false;
    }
    return answers_equal(parse_answer(p), parse_answer(r), reason, options);
  } catch (const std::exception& e) {  // e.g. std::bad_alloc: a verdict, never a crash
    if (reason) *reason = std::string("verifier error: ") + e.what();
    return false;
  }
}

MathVerdict verify_math(std::string_view prediction_text, std::string_view reference_answer, const VerifyOptions& options) {
  MathVerdict v;
  try {
    if (prediction_text.size() > options.max_text_length) {
      prediction_text = prediction_text.substr(prediction_text.size() - options.max_text_length);
    }
    std::optional<std::string> extracted = extract_answer(prediction_text, options.format);
    if (!extracted) {
      v.reason = "no answer found (format " + std::string(format_name(options.format)) + ")";
      return v;
    }
    v.extracted = *extracted;
    v.correct = math_equal(*extracted, reference_final_answer(reference_answer), &v.reason, options.compare);
  } catch (const std::exception& e) {
    v.correct = false;
    v.reason = std::string("verifier error: ") + e.what();
  }
  return v;
}

}  // namespace rlf::math

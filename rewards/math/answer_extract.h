// Finding the final answer in a model's (or a reference's) solution text.
//
// Formats, tried in this order by AnswerFormat::Auto:
//   Boxed      the contents of the last \boxed{...} or \fbox{...} (nested
//              braces allowed; "\boxed 5" without braces too)
//   Gsm8k      the rest of the last line starting with "#### "
//   AnswerIs   after the last "answer is" / "answer:" (case-insensitive):
//              a $...$ span, else the text up to the end of the sentence
//   (Auto)     the whole text when it is a bare answer: one short line
//              without prose words ("\\frac{1}{2}", "x = 5", "even")
//   LastNumber the last number in the text ("1,000", "-3.5", "$18.00")
// Work is linear in the text; never throws.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace rlf::math {

enum class AnswerFormat {
  Auto,        // Boxed, Gsm8k, AnswerIs, a bare answer, then LastNumber
  Boxed,       // \boxed{...} / \fbox{...}
  Gsm8k,       // "#### n"
  AnswerIs,    // "The answer is n", "answer: n"
  LastNumber,  // the last number in the text
};

// The name used in messages and on the command line: "auto", "boxed", ...
std::string_view format_name(AnswerFormat format);
// Parses a name written by format_name(); throws rlf::Error listing the names.
AnswerFormat parse_answer_format(std::string_view name);

// The answer in `text` in the given format, or nullopt when there is none.
std::optional<std::string> extract_answer(std::string_view text, AnswerFormat format = AnswerFormat::Auto);

// The contents of the last \boxed{} / \fbox{} (nullopt when none or unbalanced).
std::optional<std::string> extract_boxed(std::string_view text);

// The last number in `text`, with its sign, thousands commas removed.
std::optional<std::string> extract_last_number(std::string_view text);

}  // namespace rlf::math

// Text-level normalisation of a final answer before it is parsed: strips
// what does not change the value (math delimiters, \left/\right, spacing
// commands, units, degree and percent signs, dollar signs, thousands
// separators, \text wrappers) and unifies spellings (\dfrac -> \frac, unicode
// symbols -> LaTeX). Every rule is listed in docs/verifiers.md.
//
// The result is still LaTeX-ish text; math_answer.h gives it structure.
// Runs in time linear in the input (times a small constant number of passes);
// never throws.
#pragma once

#include <string>
#include <string_view>

namespace rlf::math {

// Normalises one final answer ("\$1{,}000.00", "5\text{ cm}", "x \in [1,2)").
std::string normalize_answer(std::string_view answer);

// Finds the brace group starting at text[open] == '{' and returns the index of
// its matching '}', or npos when unbalanced. Bounded by the text length.
size_t matching_brace(std::string_view text, size_t open);

// Trims ASCII whitespace at both ends.
std::string trim(std::string_view s);

}  // namespace rlf::math

// Cheap lexical similarity of texts by word n-grams: what the reflection
// memory's lesson pool retrieves by (LANPO-style "related tasks") and what
// the reflect-retry environment's reflection-quality bonus measures
// redundancy with (docs/feedback.md). No model, no tokenizer: the same
// numbers on every machine.
//
// Words: maximal runs of ASCII letters and digits (lower-cased) or of bytes
// >= 0x80 (UTF-8 text stays whole); every other non-space character is a
// word of its own ("12+7" -> "12", "+", "7"). An n-gram is n consecutive
// words; the sets below hold distinct n-grams.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace rlf {

std::vector<std::string> text_words(std::string_view text);

// |A ∩ B| / |A|, A and B the distinct word n-grams of `a` and `b`: how much
// of `a` is already in `b` (0 when `a` has no n-gram). n >= 1.
double ngram_containment(std::string_view a, std::string_view b, int n);

// |A ∩ B| / |A ∪ B| (0 when both have none). n >= 1.
double ngram_jaccard(std::string_view a, std::string_view b, int n);

}  // namespace rlf

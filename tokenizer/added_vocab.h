// Added tokens of a tokenizer.json ("added_tokens"): matched in the text
// before any splitting and never broken, as tokenizers' AddedVocabulary does.
// Tokens with normalized=false are matched in the raw text; the others in the
// normalized text, against their own normalized form. Matching is
// leftmost-longest; lstrip/rstrip swallow adjacent whitespace; single_word
// tokens only match between non-word characters.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/regex_split.h"

namespace rlf {

struct AddedToken {
  std::string content;
  int32_t id = -1;
  bool special = false;
  bool lstrip = false;
  bool rstrip = false;
  bool normalized = false;
  bool single_word = false;
};

// One piece of a text split at added tokens: either an added token's id or
// a span of ordinary text.
struct AddedSplit {
  Span span;
  int32_t id = -1;  // -1: ordinary text
};

// Finds the occurrences of a set of patterns (leftmost-longest).
class AddedTokenMatcher {
 public:
  // `patterns[i]` is the text to look for; `tokens[i]` its token.
  void build(std::vector<std::string> patterns, std::vector<const AddedToken*> tokens);
  bool empty() const { return patterns_.empty(); }
  // Splits `text` into added-token matches and the text between them.
  std::vector<AddedSplit> split(std::string_view text) const;

 private:
  std::vector<std::string> patterns_;
  std::vector<const AddedToken*> tokens_;
  std::array<std::vector<uint32_t>, 256> by_first_byte_;  // pattern indices, longest first
};

}  // namespace rlf

// Pattern matching and splitting as Hugging Face `tokenizers` does it.
//
// tokenizers compiles its Split/ByteLevel regexes with Oniguruma (Ruby syntax).
// Regex translates that syntax to PCRE2 (UTF + UCP, JIT when available) where
// the two differ (\s, \w, \h, \uXXXX, {,n}, stacked `{n}+`, nested classes),
// and find_all() reproduces the onig crate's find_iter (an empty match right
// after the previous match is skipped). split_by_matches() applies one of the
// SplitDelimiterBehavior rules to the matches.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace rlf {

using Span = std::pair<size_t, size_t>;  // [begin, end) byte offsets

class Regex {
 public:
  // Compiles `pattern` (Oniguruma syntax). `context` names where it came from
  // (file and field) for error messages.
  Regex(std::string_view pattern, const std::string& context);
  ~Regex();
  Regex(const Regex&) = delete;
  Regex& operator=(const Regex&) = delete;

  // Every match in `text` (valid UTF-8), left to right, non-overlapping.
  std::vector<Span> find_all(std::string_view text) const;

  // The PCRE2 pattern actually compiled (for diagnostics and tests).
  const std::string& pcre2_pattern() const { return translated_; }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::string translated_;
};

// Translates an Oniguruma (Ruby syntax) pattern into an equivalent PCRE2 one.
std::string onig_to_pcre2(std::string_view pattern);

// Non-overlapping occurrences of a literal string.
std::vector<Span> find_literal(std::string_view text, std::string_view needle);

enum class SplitBehavior { Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous };

// Parses "Removed", "Isolated", ...; throws naming `context` otherwise.
SplitBehavior parse_split_behavior(const std::string& name, const std::string& context);

// The pieces of a text of `text_len` bytes split at `matches` (sorted,
// non-overlapping) with `behavior`; `invert` swaps matches and gaps first.
// Empty pieces are dropped, as tokenizers' PreTokenizedString::split does.
std::vector<Span> split_by_matches(size_t text_len, const std::vector<Span>& matches, SplitBehavior behavior,
                                   bool invert);

}  // namespace rlf

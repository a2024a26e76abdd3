// A compiled PCRE2 regular expression for the text rewards: UTF-8 with
// Unicode properties (\w, \b and case folding know non-ASCII letters),
// tolerant of invalid UTF-8 in the subject (it simply does not match there),
// and bounded work per match (a pathological pattern reports an error
// instead of hanging). Immutable after construction; safe to share between
// threads.
#pragma once

#include <memory>
#include <string>
#include <string_view>

namespace rlf {

struct TextPatternOptions {
  bool case_insensitive = false;  // Unicode case folding
  bool dotall = false;            // '.' also matches newlines
  bool multiline = false;         // '^' and '$' match at every line
};

struct TextPatternMatch {
  bool matched = false;
  std::string error;  // non-empty when matching failed (e.g. "match limit exceeded")
};

class TextPattern {
 public:
  // Throws rlf::Error "invalid regular expression /p/ at offset N: reason".
  explicit TextPattern(const std::string& pattern, const TextPatternOptions& options = {});
  ~TextPattern();
  TextPattern(TextPattern&&) noexcept;
  TextPattern& operator=(TextPattern&&) noexcept;

  // Whether the pattern matches somewhere in `text`.
  TextPatternMatch search(std::string_view text) const;
  // Whether the pattern matches all of `text`.
  TextPatternMatch full_match(std::string_view text) const;

  const std::string& pattern() const { return pattern_; }

 private:
  TextPatternMatch match(std::string_view text, bool whole) const;
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::string pattern_;
};

// `literal` with every regex metacharacter escaped.
std::string regex_escape(std::string_view literal);

}  // namespace rlf

// Added-token matching (see added_vocab.h).
#include "tokenizer/added_vocab.h"

#include <algorithm>

#include "tokenizer/unicode_text.h"

namespace rlf {

namespace {

// The code point that ends at `end` (exclusive).
char32_t last_code_point(std::string_view s, size_t end) {
  size_t start = end - 1;
  while (start > 0 && (static_cast<unsigned char>(s[start]) & 0xC0) == 0x80) --start;
  return unicode::next_code_point(s, start);
}

}  // namespace

void AddedTokenMatcher::build(std::vector<std::string> patterns, std::vector<const AddedToken*> tokens) {
  patterns_ = std::move(patterns);
  tokens_ = std::move(tokens);
  for (auto& v : by_first_byte_) v.clear();
  for (uint32_t i = 0; i < patterns_.size(); ++i)
    if (!patterns_[i].empty()) by_first_byte_[static_cast<unsigned char>(patterns_[i][0])].push_back(i);
  for (auto& v : by_first_byte_)
    std::stable_sort(v.begin(), v.end(), [&](uint32_t a, uint32_t b) { return patterns_[a].size() > patterns_[b].size(); });
}

std::vector<AddedSplit> AddedTokenMatcher::split(std::string_view text) const {
  std::vector<AddedSplit> out;
  size_t start_offset = 0;  // end of the previous accepted match
  size_t pos = 0;           // where the next search starts
  while (pos < text.size()) {
    // Leftmost-longest: first position with a match, longest pattern there.
    size_t mstart = std::string_view::npos, mend = 0;
    const AddedToken* token = nullptr;
    for (size_t i = pos; i < text.size() && !token; ++i) {
      for (uint32_t k : by_first_byte_[static_cast<unsigned char>(text[i])]) {
        const std::string& p = patterns_[k];
        if (text.compare(i, p.size(), p) == 0) {
          mstart = i;
          mend = i + p.size();
          token = tokens_[k];
          break;
        }
      }
    }
    if (!token) break;
    pos = mend;
    size_t start = mstart, stop = mend;
    if (token->single_word) {
      bool start_ok = start == 0 || !unicode::is_word_char(last_code_point(text, start));
      size_t p = stop;
      bool stop_ok = stop == text.size() || !unicode::is_word_char(unicode::next_code_point(text, p));
      if (!start_ok || !stop_ok) continue;
    }
    if (token->lstrip) {
      size_t s = start;
      while (s > 0) {
        size_t prev = s - 1;
        while (prev > 0 && (static_cast<unsigned char>(text[prev]) & 0xC0) == 0x80) --prev;
        size_t q = prev;
        if (!unicode::is_whitespace(unicode::next_code_point(text, q))) break;
        s = prev;
      }
      start = std::max(s, start_offset);
    }
    if (token->rstrip) {
      size_t e = stop;
      while (e < text.size()) {
        size_t q = e;
        if (!unicode::is_whitespace(unicode::next_code_point(text, q))) break;
        e = q;
      }
      stop = e;
      pos = std::max(pos, stop);
    }
    if (start_offset < start) out.push_back({{start_offset, start}, -1});
    out.push_back({{start, stop}, token->id});
    start_offset = stop;
  }
  if (start_offset < text.size()) out.push_back({{start_offset, text.size()}, -1});
  return out;
}

}  // namespace rlf

#include "util/text_similarity.h"

#include <set>

#include "util/error.h"

namespace rlf {

namespace {

bool word_byte(unsigned char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c >= 0x80; }
bool space_byte(unsigned char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

std::set<std::string> ngrams(std::string_view text, int n) {
  check(n >= 1, "n-gram order must be >= 1 (got ", n, ")");
  const std::vector<std::string> w = text_words(text);
  std::set<std::string> out;
  const size_t k = static_cast<size_t>(n);
  for (size_t i = 0; i + k <= w.size(); ++i) {
    std::string g = w[i];
    for (size_t j = 1; j < k; ++j) g.append(1, '\x1f').append(w[i + j]);  // a separator no word contains
    out.insert(std::move(g));
  }
  return out;
}

size_t common(const std::set<std::string>& a, const std::set<std::string>& b) {
  size_t n = 0;
  for (const std::string& g : a) n += b.count(g);
  return n;
}

}  // namespace

std::vector<std::string> text_words(std::string_view text) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i < text.size()) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (space_byte(c)) {
      ++i;
    } else if (word_byte(c)) {
      std::string w;
      while (i < text.size() && word_byte(static_cast<unsigned char>(text[i]))) {
        const char x = text[i++];
        w.push_back(x >= 'A' && x <= 'Z' ? static_cast<char>(x - 'A' + 'a') : x);
      }
      out.push_back(std::move(w));
    } else {
      out.emplace_back(1, text[i++]);
    }
  }
  return out;
}

double ngram_containment(std::string_view a, std::string_view b, int n) {
  const auto A = ngrams(a, n);
  if (A.empty()) return 0.0;
  return static_cast<double>(common(A, ngrams(b, n))) / static_cast<double>(A.size());
}

double ngram_jaccard(std::string_view a, std::string_view b, int n) {
  const auto A = ngrams(a, n), B = ngrams(b, n);
  const size_t both = common(A, B);
  const size_t either = A.size() + B.size() - both;
  return either ? static_cast<double>(both) / static_cast<double>(either) : 0.0;
}

}  // namespace rlf

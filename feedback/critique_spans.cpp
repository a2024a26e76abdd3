#include "feedback/critique_spans.h"

#include <algorithm>
#include <cctype>
#include <cmath>

#include "util/json_util.h"

namespace rlf {

namespace {

// "error" / "good" (any case) at the start of `line` (after spaces), then ':'
// and a JSON string; the keyword's score and the string, or nothing.
bool read_span_line(const std::string& line, double& score, std::string& quote) {
  size_t at = line.find_first_not_of(" \t");
  if (at == std::string::npos) return false;
  std::string word;
  while (at < line.size() && std::isalpha(static_cast<unsigned char>(line[at])))
    word += static_cast<char>(std::tolower(static_cast<unsigned char>(line[at++])));
  if (word == "error") score = -1;
  else if (word == "good") score = 1;
  else return false;
  at = line.find_first_not_of(" \t", at);
  if (at == std::string::npos || line[at] != ':') return false;
  at = line.find('"', at);
  if (at == std::string::npos) return false;
  // The quote runs to its closing unescaped '"'; the JSON parser undoes the escapes.
  size_t end = at + 1;
  for (; end < line.size(); ++end) {
    if (line[end] == '\\') ++end;
    else if (line[end] == '"') break;
  }
  if (end >= line.size()) return false;
  try {
    quote = Json::parse(line.substr(at, end - at + 1)).get<std::string>();
  } catch (const std::exception&) {
    return false;
  }
  return !quote.empty();
}

}  // namespace

std::vector<CritiqueSpan> spans_from_critique(const std::string& critique, const std::string& response,
                                              int64_t* unmatched) {
  std::vector<CritiqueSpan> spans;
  size_t from = 0;
  while (from <= critique.size()) {
    size_t nl = critique.find('\n', from);
    if (nl == std::string::npos) nl = critique.size();
    const std::string line = critique.substr(from, nl - from);
    from = nl + 1;
    double score = 0;
    std::string quote;
    if (!read_span_line(line, score, quote)) continue;
    // The first occurrence that no earlier span took.
    bool found = false;
    for (size_t at = response.find(quote); at != std::string::npos; at = response.find(quote, at + 1)) {
      const auto b = static_cast<int64_t>(at), e = b + static_cast<int64_t>(quote.size());
      const bool taken = std::any_of(spans.begin(), spans.end(), [&](const CritiqueSpan& s) { return s.begin == b; });
      if (taken) continue;
      spans.push_back({.begin = b, .end = e, .score = score});
      found = true;
      break;
    }
    if (!found && unmatched) ++*unmatched;
  }
  return spans;
}

DecodedTokens decode_with_offsets(const Tokenizer& tok, std::span<const int32_t> ids) {
  DecodedTokens d;
  StreamDecoder decoder(tok, /*skip_special=*/true);
  for (int32_t id : ids) {
    d.begin.push_back(static_cast<int64_t>(d.text.size()));
    d.text += decoder.push(id);
  }
  d.text += decoder.finish();  // held-back bytes: the last token's
  d.begin.push_back(static_cast<int64_t>(d.text.size()));
  return d;
}

std::vector<float> token_scores(const DecodedTokens& decoded, const std::vector<CritiqueSpan>& spans) {
  const size_t n = decoded.begin.empty() ? 0 : decoded.begin.size() - 1;
  std::vector<float> out(n, 0.0f);
  for (size_t k = 0; k < n; ++k) {
    const int64_t b = decoded.begin[k], e = decoded.begin[k + 1];
    if (e <= b) continue;  // wrote no character
    for (const CritiqueSpan& s : spans)
      if (s.begin < e && b < s.end && std::abs(s.score) > std::abs(out[k])) out[k] = static_cast<float>(s.score);
  }
  return out;
}

}  // namespace rlf

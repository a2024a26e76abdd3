#include "feedback/feedback_prompt.h"

#include <functional>

namespace rlf {

namespace {

bool continuation_byte(char c) { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; }

// The largest n in [0, hi] with fits(n), assuming fits is monotone; -1 when
// not even fits(0).
int64_t largest_fitting(int64_t hi, const std::function<bool(int64_t)>& fits) {
  if (!fits(0)) return -1;
  int64_t lo = 0;
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo + 1) / 2;
    if (fits(mid)) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

// The last `n` bytes of s, moved forward to a character boundary.
std::string tail(const std::string& s, int64_t n) {
  size_t start = s.size() - static_cast<size_t>(n);
  while (start < s.size() && continuation_byte(s[start])) ++start;
  return s.substr(start);
}

// The first `n` bytes of s, moved back to a character boundary.
std::string head(const std::string& s, int64_t n) {
  size_t end = static_cast<size_t>(n);
  while (end > 0 && end < s.size() && continuation_byte(s[end])) --end;
  return s.substr(0, end);
}

}  // namespace

std::optional<FittedPrompt> fit_feedback_prompt(const std::string& template_text, const CritiqueRequest& request,
                                                const std::string& critique, const Tokenizer& tokenizer,
                                                bool add_special, int64_t room, int64_t max_tokens) {
  FittedPrompt out;
  auto attempt = [&](const CritiqueRequest& r, const std::string& c) {
    out.text = fill_feedback_template(template_text, r, c);
    out.ids = tokenizer.encode(out.text, add_special);
    return static_cast<int64_t>(out.ids.size()) + room <= max_tokens;
  };
  if (attempt(request, critique)) return out;
  // 2. Keep the end of the response.
  CritiqueRequest r = request;
  const std::string& resp = request.response;
  auto with_response_tail = [&](int64_t n) {
    r.response = n > 0 ? "..." + tail(resp, n) : "";
    return attempt(r, critique);
  };
  const int64_t keep = largest_fitting(static_cast<int64_t>(resp.size()), with_response_tail);
  if (keep >= 0) {
    with_response_tail(keep);
    out.truncated = true;
    return out;
  }
  // 3. No response; keep the start of the critique.
  r.response = "";
  auto with_critique_head = [&](int64_t n) { return attempt(r, head(critique, n)); };
  const int64_t keep_c = largest_fitting(static_cast<int64_t>(critique.size()), with_critique_head);
  if (keep_c < 0) return std::nullopt;
  with_critique_head(keep_c);
  out.truncated = true;
  return out;
}

}  // namespace rlf

// PCRE2 (8-bit) behind a pimpl: compile once, a fresh match block per call (thread-safe).
#define PCRE2_CODE_UNIT_WIDTH 8
#include "rewards/regex.h"

#include <pcre2.h>

#include "util/error.h"

namespace rlf {
namespace {

constexpr uint32_t kMatchLimit = 10'000'000;  // backtracking steps per match
constexpr uint32_t kDepthLimit = 100'000;     // nested backtracking frames per match (KiB of heap)

std::string pcre2_message(int code) {
  PCRE2_UCHAR buffer[256];
  int n = pcre2_get_error_message(code, buffer, sizeof(buffer));
  return n < 0 ? str("PCRE2 error ", code) : std::string(reinterpret_cast<const char*>(buffer), size_t(n));
}

}  // namespace

struct TextPattern::Impl {
  pcre2_code* code = nullptr;
  pcre2_match_context* context = nullptr;
  ~Impl() {
    pcre2_match_context_free(context);
    pcre2_code_free(code);
  }
};

TextPattern::TextPattern(const std::string& pattern, const TextPatternOptions& options) : impl_(std::make_unique<Impl>()), pattern_(pattern) {
  uint32_t flags = PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF;
  if (options.case_insensitive) flags |= PCRE2_CASELESS;
  if (options.dotall) flags |= PCRE2_DOTALL;
  if (options.multiline) flags |= PCRE2_MULTILINE;
  int err = 0;
  PCRE2_SIZE offset = 0;
  impl_->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(), flags, &err, &offset,
                              nullptr);
  check(impl_->code != nullptr, "invalid regular expression /", pattern, "/ at offset ", offset, ": ",
        pcre2_message(err));
  impl_->context = pcre2_match_context_create(nullptr);
  check(impl_->context != nullptr, "out of memory creating a PCRE2 match context");
  pcre2_set_match_limit(impl_->context, kMatchLimit);
  pcre2_set_depth_limit(impl_->context, kDepthLimit);
}

TextPattern::~TextPattern() = default;
TextPattern::TextPattern(TextPattern&&) noexcept = default;
TextPattern& TextPattern::operator=(TextPattern&&) noexcept = default;

TextPatternMatch TextPattern::match(std::string_view text, bool whole) const {
  TextPatternMatch out;
  pcre2_match_data* data = pcre2_match_data_create_from_pattern(impl_->code, nullptr);
  if (!data) {
    out.error = "out of memory";
    return out;
  }
  uint32_t flags = whole ? (PCRE2_ANCHORED | PCRE2_ENDANCHORED) : 0;
  int rc = pcre2_match(impl_->code, reinterpret_cast<PCRE2_SPTR>(text.data()), text.size(), 0, flags, data,
                       impl_->context);
  pcre2_match_data_free(data);
  if (rc >= 0) {
    out.matched = true;
  } else if (rc != PCRE2_ERROR_NOMATCH) {
    out.error = pcre2_message(rc);
  }
  return out;
}

TextPatternMatch TextPattern::search(std::string_view text) const { return match(text, false); }
TextPatternMatch TextPattern::full_match(std::string_view text) const { return match(text, true); }

std::string regex_escape(std::string_view literal) {
  std::string out;
  for (char c : literal) {
    unsigned char u = static_cast<unsigned char>(c);
    bool plain = u >= 0x80 || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
    if (!plain && c != ' ') out += '\\';
    out += c;
  }
  return out;
}

}  // namespace rlf

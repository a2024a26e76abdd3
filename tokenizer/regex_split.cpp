// Oniguruma-compatible regex splitting on PCRE2 (see regex_split.h).
#define PCRE2_CODE_UNIT_WIDTH 8
#include "tokenizer/regex_split.h"

#include <pcre2.h>

#include <algorithm>
#include <cctype>

#include "tokenizer/unicode_text.h"
#include "util/error.h"

namespace rlf {

namespace {

// Oniguruma's Unicode classes, written with PCRE2 properties.
constexpr const char* kSpaceBody = "\\t-\\r\\x{85}\\p{Z}";        // White_Space
// Onig's \w: Alphabetic, marks, decimal digits, connector punctuation, and
// the Latin-1 characters its single-byte ctype table calls alphanumeric.
constexpr const char* kWordBody = "\\p{Alphabetic}\\p{M}\\p{Nd}\\p{Pc}\\x{B2}\\x{B3}\\x{B9}\\x{BC}-\\x{BE}";
// Inside a class Onig's \W complements the Unicode Word property alone.
constexpr const char* kWordPropertyBody = "\\p{Alphabetic}\\p{M}\\p{Nd}\\p{Pc}";
constexpr const char* kHexBody = "0-9a-fA-F";                     // \h (hex digit)

std::string cls(const char* body, bool negate) { return std::string(negate ? "[^" : "[") + body + "]"; }

bool is_hex(char c) { return std::isxdigit(static_cast<unsigned char>(c)) != 0; }

// Parses an interval quantifier "{n}", "{n,}", "{n,m}", "{,m}" at p[i] == '{'.
// Returns its length (0 when it is a literal brace) and its PCRE2 spelling.
size_t parse_interval(std::string_view p, size_t i, std::string& out) {
  size_t j = i + 1;
  std::string lo, hi;
  bool comma = false;
  while (j < p.size() && std::isdigit(static_cast<unsigned char>(p[j]))) lo += p[j++];
  if (j < p.size() && p[j] == ',') {
    comma = true;
    ++j;
    while (j < p.size() && std::isdigit(static_cast<unsigned char>(p[j]))) hi += p[j++];
  }
  if (j >= p.size() || p[j] != '}') return 0;
  if (lo.empty() && hi.empty()) return 0;
  out.assign(1, '{');
  if (lo.empty()) out += '0';
  out += lo;
  if (comma) {
    out += ',';
    out += hi;
  }
  out += '}';
  return j - i + 1;
}

class Translator {
 public:
  explicit Translator(std::string_view p) : p_(p) {}

  std::string run() {
    std::vector<size_t> group_starts;
    size_t atom_start = 0;
    while (i_ < p_.size()) {
      char c = p_[i_];
      if (c == '\\') {
        atom_start = out_.size();
        escape(false);
      } else if (c == '[') {
        atom_start = out_.size();
        out_ += char_class();
      } else if (c == '(') {
        group_starts.push_back(out_.size());
        out_ += c;
        ++i_;
      } else if (c == ')') {
        if (!group_starts.empty()) {
          atom_start = group_starts.back();
          group_starts.pop_back();
        }
        out_ += c;
        ++i_;
      } else if (c == '{') {
        std::string q;
        size_t n = parse_interval(p_, i_, q);
        if (n == 0) {
          atom_start = out_.size();
          out_ += "\\{";
          ++i_;
          continue;
        }
        i_ += n;
        if (i_ < p_.size() && p_[i_] == '+') {
          // Ruby: "X{n}+" is (X{n})+, not a possessive quantifier.
          out_.insert(atom_start, "(?:");
          out_ += q + ")+";
          ++i_;
        } else {
          out_ += q;
        }
      } else if (c == '}') {
        atom_start = out_.size();
        out_ += "\\}";
        ++i_;
      } else if (c == '*' || c == '+' || c == '?' || c == '|') {
        out_ += c;
        ++i_;
      } else {
        atom_start = out_.size();
        size_t n = unicode::utf8_seq_len(static_cast<unsigned char>(c));
        out_.append(p_.substr(i_, n));
        i_ += n;
      }
    }
    return out_;
  }

 private:
  // Translates the escape at p_[i_] == '\\' into `out_` (or the class body
  // when `in_class`).
  void escape(bool in_class) { out_ += escape_text(in_class); }

  std::string escape_text(bool in_class) {
    ++i_;  // the backslash
    if (i_ >= p_.size()) return "\\\\";
    char c = p_[i_++];
    switch (c) {
      case 'h': return in_class ? kHexBody : cls(kHexBody, false);
      case 'H': return in_class ? negated_member(kHexBody) : cls(kHexBody, true);
      case 's': return in_class ? kSpaceBody : cls(kSpaceBody, false);
      case 'S': return in_class ? negated_member(kSpaceBody) : cls(kSpaceBody, true);
      case 'w': return in_class ? kWordBody : cls(kWordBody, false);
      case 'W': return in_class ? negated_member(kWordPropertyBody) : cls(kWordBody, true);
      case 'b':
        if (in_class) return "\\x{08}";
        return std::string("(?:(?<=") + cls(kWordBody, false) + ")(?!" + cls(kWordBody, false) + ")|(?<!" +
               cls(kWordBody, false) + ")(?=" + cls(kWordBody, false) + "))";
      case 'B':
        if (in_class) return "B";
        return std::string("(?:(?<=") + cls(kWordBody, false) + ")(?=" + cls(kWordBody, false) + ")|(?<!" +
               cls(kWordBody, false) + ")(?!" + cls(kWordBody, false) + "))";
      case 'u': {
        if (i_ + 4 <= p_.size() && is_hex(p_[i_]) && is_hex(p_[i_ + 1]) && is_hex(p_[i_ + 2]) && is_hex(p_[i_ + 3])) {
          std::string r = "\\x{" + std::string(p_.substr(i_, 4)) + "}";
          i_ += 4;
          return r;
        }
        return "u";
      }
      case 'p':
      case 'P': {
        if (i_ < p_.size() && p_[i_] == '{') {
          size_t close = p_.find('}', i_);
          if (close != std::string_view::npos) {
            std::string name(p_.substr(i_ + 1, close - i_ - 1));
            i_ = close + 1;
            bool neg = c == 'P';
            if (!name.empty() && name[0] == '^') {
              neg = !neg;
              name = name.substr(1);
            }
            if (name == "Word" || name == "word") {
              if (in_class && !neg) return kWordBody;
              return cls(kWordBody, neg);
            }
            return std::string("\\") + (neg ? 'P' : 'p') + "{" + name + "}";
          }
        }
        return std::string("\\") + c;
      }
      case 'x': {
        if (i_ < p_.size() && p_[i_] == '{') {
          size_t close = p_.find('}', i_);
          if (close != std::string_view::npos) {
            std::string r = "\\x" + std::string(p_.substr(i_, close - i_ + 1));
            i_ = close + 1;
            return r;
          }
        }
        return "\\x";
      }
      default: {
        // Multi-byte characters after a backslash are literals.
        size_t n = unicode::utf8_seq_len(static_cast<unsigned char>(c));
        std::string r = "\\";
        if (n > 1) r.clear();
        r.append(p_.substr(i_ - 1, n));
        i_ += n - 1;
        return r;
      }
    }
  }

  // A negated shorthand (\W, \S, \H) inside a class cannot be a PCRE2 class
  // member; char_class() combines it as an extra alternative.
  std::string negated_member(const char* body) {
    negated_members_.push_back(body);
    return "";
  }

  // Parses a bracket expression at p_[i_] == '[' and returns PCRE2 text.
  // Nested non-negated classes are flattened (union); "A&&B" (intersection)
  // becomes a lookahead (?=[B])[A].
  std::string char_class() {
    ++i_;  // '['
    bool negated = false;
    if (i_ < p_.size() && p_[i_] == '^') {
      negated = true;
      ++i_;
    }
    std::string body;
    std::vector<std::string> intersect;  // further operands of &&
    std::vector<std::string> saved_negated = std::move(negated_members_);
    negated_members_.clear();
    bool first = true;
    while (i_ < p_.size()) {
      char c = p_[i_];
      if (c == ']' && !first) {
        ++i_;
        break;
      }
      first = false;
      if (c == '\\') {
        body += escape_text(true);
      } else if (c == '[' && i_ + 1 < p_.size() && p_[i_ + 1] == ':') {
        size_t close = p_.find(":]", i_ + 2);
        if (close == std::string_view::npos) {
          body += "\\[";
          ++i_;
        } else {
          body.append(p_.substr(i_, close + 2 - i_));
          i_ = close + 2;
        }
      } else if (c == '[') {
        std::string nested = char_class();
        if (nested.rfind("[^", 0) == 0 || nested.rfind("(?:", 0) == 0) {
          intersect.push_back(nested);  // an operand of && (negated classes cannot be flattened)
        } else {
          body += nested.substr(1, nested.size() - 2);
        }
      } else if (c == '&' && i_ + 1 < p_.size() && p_[i_ + 1] == '&') {
        i_ += 2;
        intersect.push_back("&&");
      } else if (c == '[' || c == ']') {
        body += '\\';
        body += c;
        ++i_;
      } else {
        size_t n = unicode::utf8_seq_len(static_cast<unsigned char>(c));
        body.append(p_.substr(i_, n));
        i_ += n;
      }
    }
    std::vector<std::string> neg_members = std::move(negated_members_);
    negated_members_ = std::move(saved_negated);
    if (!neg_members.empty() && intersect.empty()) {
      if (!negated) {
        // [x\W] = [x] or [^word]
        std::string alt = "(?:";
        if (!body.empty()) alt += "[" + body + "]|";
        for (size_t k = 0; k < neg_members.size(); ++k) alt += (k ? "|[^" : "[^") + neg_members[k] + "]";
        return alt + ")";
      }
      // [^x\W] = not x, and word
      std::string r = "(?:";
      for (size_t k = 1; k < neg_members.size(); ++k) r += "(?=[" + neg_members[k] + "])";
      if (!body.empty()) r += "(?![" + body + "])";
      return r + "[" + neg_members[0] + "])";
    }
    if (intersect.empty()) return std::string(negated ? "[^" : "[") + body + "]";
    // Intersection: body holds every operand's text concatenated; rebuild by
    // treating the text before the first && as A and nested classes as B.
    std::string lookaheads;
    for (const auto& op : intersect)
      if (op != "&&") lookaheads += "(?=" + op + ")";
    std::string base = "(?:" + lookaheads + "[" + body + "])";
    if (negated) base = "(?:(?!" + base + ")[\\x{0}-\\x{10FFFF}])";
    return base;
  }

  std::string_view p_;
  size_t i_ = 0;
  std::string out_;
  std::vector<std::string> negated_members_;  // of the class being parsed
};

const char* pcre2_error_text(int code) {
  static thread_local char buf[256];
  pcre2_get_error_message(code, reinterpret_cast<PCRE2_UCHAR*>(buf), sizeof(buf));
  return buf;
}

}  // namespace

std::string onig_to_pcre2(std::string_view pattern) { return Translator(pattern).run(); }

struct Regex::Impl {
  pcre2_code* code = nullptr;
  bool jit = false;
  std::string context;
  ~Impl() {
    if (code) pcre2_code_free(code);
  }
};

Regex::Regex(std::string_view pattern, const std::string& context) : impl_(std::make_unique<Impl>()) {
  impl_->context = context;
  check(unicode::is_valid_utf8(pattern), context, ": the regex pattern is not valid UTF-8");
  translated_ = onig_to_pcre2(pattern);
  pcre2_compile_context* cctx = pcre2_compile_context_create(nullptr);
  pcre2_set_newline(cctx, PCRE2_NEWLINE_LF);
  int err = 0;
  PCRE2_SIZE err_off = 0;
  impl_->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(translated_.data()), translated_.size(),
                              PCRE2_UTF | PCRE2_UCP | PCRE2_MULTILINE | PCRE2_ALT_CIRCUMFLEX, &err, &err_off, cctx);
  pcre2_compile_context_free(cctx);
  if (!impl_->code)
    fail(context, ": cannot compile regex '", std::string(pattern), "' (as PCRE2 '", translated_, "'): ",
         pcre2_error_text(err), " at offset ", err_off);
  impl_->jit = pcre2_jit_compile(impl_->code, PCRE2_JIT_COMPLETE) == 0;
}

Regex::~Regex() = default;

namespace {

// One JIT stack per thread, large enough for long runs of whitespace.
pcre2_match_context* thread_match_context() {
  struct Holder {
    pcre2_match_context* ctx = nullptr;
    pcre2_jit_stack* stack = nullptr;
    Holder() {
      ctx = pcre2_match_context_create(nullptr);
      stack = pcre2_jit_stack_create(64 * 1024, 8 * 1024 * 1024, nullptr);
      pcre2_jit_stack_assign(ctx, nullptr, stack);
    }
    ~Holder() {
      pcre2_jit_stack_free(stack);
      pcre2_match_context_free(ctx);
    }
  };
  static thread_local Holder holder;
  return holder.ctx;
}

}  // namespace

std::vector<Span> Regex::find_all(std::string_view text) const {
  std::vector<Span> out;
  pcre2_match_data* md = pcre2_match_data_create_from_pattern(impl_->code, nullptr);
  pcre2_match_context* mctx = thread_match_context();
  auto subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  size_t last_end = 0;
  bool have_last = false;
  size_t last_match_end = 0;
  while (last_end <= text.size()) {
    int rc = impl_->jit ? pcre2_jit_match(impl_->code, subject, text.size(), last_end, 0, md, mctx)
                        : pcre2_match(impl_->code, subject, text.size(), last_end, PCRE2_NO_UTF_CHECK, md, mctx);
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0) {
      pcre2_match_data_free(md);
      fail(impl_->context, ": regex match failed: ", pcre2_error_text(rc));
    }
    PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md);
    size_t s = ov[0], e = ov[1];
    if (s == e && have_last && last_match_end == e) {
      // Onig's find_iter: no empty match right after the previous match.
      last_end += last_end < text.size() ? unicode::utf8_seq_len(static_cast<unsigned char>(text[last_end])) : 1;
      continue;
    }
    if (e < s) e = s;  // \K tricks are not used by tokenizers; stay safe
    out.emplace_back(s, e);
    last_end = e;
    have_last = true;
    last_match_end = e;
  }
  pcre2_match_data_free(md);
  return out;
}

std::vector<Span> find_literal(std::string_view text, std::string_view needle) {
  std::vector<Span> out;
  if (needle.empty()) return out;
  size_t pos = 0;
  while ((pos = text.find(needle, pos)) != std::string_view::npos) {
    out.emplace_back(pos, pos + needle.size());
    pos += needle.size();
  }
  return out;
}

SplitBehavior parse_split_behavior(const std::string& name, const std::string& context) {
  if (name == "Removed") return SplitBehavior::Removed;
  if (name == "Isolated") return SplitBehavior::Isolated;
  if (name == "MergedWithPrevious") return SplitBehavior::MergedWithPrevious;
  if (name == "MergedWithNext") return SplitBehavior::MergedWithNext;
  if (name == "Contiguous") return SplitBehavior::Contiguous;
  fail(context, ": unknown split behavior '", name,
       "' (expected Removed, Isolated, MergedWithPrevious, MergedWithNext or Contiguous)");
}

std::vector<Span> split_by_matches(size_t text_len, const std::vector<Span>& matches, SplitBehavior behavior,
                                   bool invert) {
  // (span, is_match) covering the whole text, as tokenizers' find_matches.
  std::vector<std::pair<Span, bool>> parts;
  if (text_len == 0) return {};
  size_t prev = 0;
  for (const auto& [s, e] : matches) {
    if (prev != s) parts.push_back({{prev, s}, false});
    parts.push_back({{s, e}, true});
    prev = e;
  }
  if (prev != text_len) parts.push_back({{prev, text_len}, false});
  if (invert)
    for (auto& p : parts) p.second = !p.second;

  std::vector<std::pair<Span, bool>> splits;  // (span, remove)
  switch (behavior) {
    case SplitBehavior::Isolated:
      for (auto& p : parts) splits.push_back({p.first, false});
      break;
    case SplitBehavior::Removed:
      splits = parts;
      break;
    case SplitBehavior::MergedWithPrevious: {
      bool prev_match = false;
      for (auto& [span, is_match] : parts) {
        if (is_match && !prev_match && !splits.empty()) splits.back().first.second = span.second;
        else splits.push_back({span, false});
        prev_match = is_match;
      }
      break;
    }
    case SplitBehavior::MergedWithNext: {
      bool prev_match = false;
      for (auto it = parts.rbegin(); it != parts.rend(); ++it) {
        auto& [span, is_match] = *it;
        if (is_match && !prev_match && !splits.empty()) splits.back().first.first = span.first;
        else splits.push_back({span, false});
        prev_match = is_match;
      }
      std::reverse(splits.begin(), splits.end());
      break;
    }
    case SplitBehavior::Contiguous: {
      bool prev_match = false;
      for (auto& [span, is_match] : parts) {
        if (is_match == prev_match && !splits.empty()) splits.back().first.second = span.second;
        else splits.push_back({span, false});
        prev_match = is_match;
      }
      break;
    }
  }
  std::vector<Span> out;
  for (auto& [span, remove] : splits)
    if (!remove && span.second > span.first) out.push_back(span);
  return out;
}

}  // namespace rlf

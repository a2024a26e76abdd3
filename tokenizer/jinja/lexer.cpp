#include "tokenizer/jinja/lexer.h"

#include <unicode/uchar.h>

#include <cstring>

#include "tokenizer/jinja/py_text.h"
#include "tokenizer/jinja/value.h"
#include "tokenizer/unicode_text.h"

namespace rlf::jinja {
namespace {

// jinja2 splits the source on \r\n, \r and \n and joins with \n.
std::string normalize_newlines(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\r') {
      out += '\n';
      if (i + 1 < s.size() && s[i + 1] == '\n') ++i;
    } else {
      out += s[i];
    }
  }
  return out;
}

bool starts_with_at(const std::string& s, size_t pos, const char* lit) {
  return s.compare(pos, std::strlen(lit), lit) == 0;
}

// Length of the run of Python-whitespace code points at `pos`.
size_t whitespace_run(const std::string& s, size_t pos) {
  size_t p = pos;
  while (p < s.size()) {
    size_t q = p;
    char32_t c = unicode::next_code_point(s, q);
    if (!py_isspace(c)) break;
    p = q;
  }
  return p - pos;
}

bool all_whitespace(const std::string& s, size_t from) {
  return from < s.size() && whitespace_run(s, from) == s.size() - from;
}

std::string rstrip_whitespace(const std::string& s) { return py_strip(s, std::nullopt, false, true); }

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// Python's string escapes, as jinja2 decodes a literal with "unicode-escape".
std::string unescape(const std::string& body, int line) {
  std::string out;
  for (size_t i = 0; i < body.size(); ++i) {
    if (body[i] != '\\' || i + 1 >= body.size()) {
      out += body[i];
      continue;
    }
    const char c = body[++i];
    auto hex = [&](size_t n) {
      uint32_t v = 0;
      for (size_t k = 1; k <= n; ++k) {
        if (i + k >= body.size() || !std::isxdigit(static_cast<unsigned char>(body[i + k])))
          raise(ErrorKind::Syntax, str("truncated \\", c, " escape (line ", line, ")"));
        v = v * 16 + static_cast<uint32_t>(std::stoi(std::string(1, body[i + k]), nullptr, 16));
      }
      i += n;
      unicode::append_utf8(out, static_cast<char32_t>(v));
    };
    switch (c) {
      case '\n': break;
      case '\\': out += '\\'; break;
      case '\'': out += '\''; break;
      case '"': out += '"'; break;
      case 'a': out += '\a'; break;
      case 'b': out += '\b'; break;
      case 'f': out += '\f'; break;
      case 'n': out += '\n'; break;
      case 'r': out += '\r'; break;
      case 't': out += '\t'; break;
      case 'v': out += '\v'; break;
      case 'x': hex(2); break;
      case 'u': hex(4); break;
      case 'U': hex(8); break;
      default:
        if (c >= '0' && c <= '7') {
          uint32_t v = static_cast<uint32_t>(c - '0');
          for (int k = 0; k < 2 && i + 1 < body.size() && body[i + 1] >= '0' && body[i + 1] <= '7'; ++k)
            v = v * 8 + static_cast<uint32_t>(body[++i] - '0');
          unicode::append_utf8(out, static_cast<char32_t>(v));
        } else if (c == 'N') {
          raise(ErrorKind::Unsupported, str("\\N{...} escapes are not supported (line ", line, ")"));
        } else {
          out += '\\';
          out += c;
        }
    }
  }
  return out;
}

class Lexer {
 public:
  Lexer(const std::string& source, const LexerOptions& o) : o_(o), s_(normalize_newlines(source)) {
    if (!o_.keep_trailing_newline && !s_.empty() && s_.back() == '\n') s_.pop_back();
  }

  std::vector<Token> run() {
    while (pos_ < s_.size()) lex_root();
    push(TokenType::Eof, "");
    return std::move(out_);
  }

 private:
  enum class Tag { Variable, Block, Comment, Raw };

  void push(TokenType t, std::string text) {
    Token tok;
    tok.type = t;
    tok.text = std::move(text);
    tok.line = line_;
    out_.push_back(std::move(tok));
  }

  void advance_to(size_t p) {
    for (size_t i = pos_; i < p; ++i) line_ += s_[i] == '\n';
    line_starting_ = p > pos_ && s_[p - 1] == '\n';
    pos_ = p;
  }

  // `{% raw %}` or `{%- raw -%}` at `p`: returns the end of the opening tag, or npos.
  size_t match_raw_begin(size_t p, char& sign) const {
    if (!starts_with_at(s_, p, "{%")) return std::string::npos;
    size_t q = p + 2;
    sign = (q < s_.size() && (s_[q] == '-' || s_[q] == '+')) ? s_[q++] : '\0';
    q += whitespace_run(s_, q);
    if (!starts_with_at(s_, q, "raw")) return std::string::npos;
    q += 3;
    q += whitespace_run(s_, q);
    if (starts_with_at(s_, q, "-%}")) return q + 3 + whitespace_run(s_, q + 3);
    if (starts_with_at(s_, q, "%}")) return q + 2;
    return std::string::npos;
  }

  void lex_root() {
    size_t p = pos_;
    Tag tag = Tag::Block;
    char sign = '\0';
    size_t open_end = std::string::npos;
    for (; p + 1 < s_.size(); ++p) {
      if (s_[p] != '{') continue;
      if ((open_end = match_raw_begin(p, sign)) != std::string::npos) {
        tag = Tag::Raw;
        break;
      }
      const char c = s_[p + 1];
      if (c != '{' && c != '%' && c != '#') continue;
      tag = c == '{' ? Tag::Variable : c == '%' ? Tag::Block : Tag::Comment;
      open_end = p + 2;
      sign = '\0';
      if (open_end < s_.size() && (s_[open_end] == '-' || s_[open_end] == '+')) sign = s_[open_end++];
      break;
    }
    if (open_end == std::string::npos) {  // the rest is data
      push(TokenType::Data, s_.substr(pos_));
      advance_to(s_.size());
      return;
    }
    emit_text_before(s_.substr(pos_, p - pos_), sign, tag != Tag::Variable);
    advance_to(open_end);
    switch (tag) {
      case Tag::Comment: lex_comment(); break;
      case Tag::Raw: lex_raw(); break;
      case Tag::Variable:
        push(TokenType::VariableBegin, "{{");
        lex_tag(false);
        break;
      case Tag::Block:
        push(TokenType::BlockBegin, "{%");
        lex_tag(true);
        break;
    }
  }

  // The data before a tag, with `-` (strip all whitespace) or lstrip_blocks
  // (strip the spaces that start the tag's line) applied.
  void emit_text_before(std::string text, char sign, bool lstrip_kind) {
    if (sign == '-') {
      text = rstrip_whitespace(text);
    } else if (sign != '+' && o_.lstrip_blocks && lstrip_kind) {
      const size_t nl = text.rfind('\n');
      const size_t l_pos = nl == std::string::npos ? 0 : nl + 1;
      if ((l_pos > 0 || line_starting_) && all_whitespace(text, l_pos)) text.resize(l_pos);
    }
    if (!text.empty()) push(TokenType::Data, text);
  }

  // End of a block, comment or raw tag at `p` ("+%}", "-%}\s*", "%}\n?"); returns its end or npos.
  size_t match_block_end(size_t p, const char* close) const {
    if (s_[p] == '+' && starts_with_at(s_, p + 1, close)) return p + 3;
    if (s_[p] == '-' && starts_with_at(s_, p + 1, close)) return p + 3 + whitespace_run(s_, p + 3);
    if (starts_with_at(s_, p, close)) return p + 2 + (o_.trim_blocks && p + 2 < s_.size() && s_[p + 2] == '\n');
    return std::string::npos;
  }

  void lex_comment() {
    for (size_t p = pos_; p < s_.size(); ++p) {
      const size_t end = match_block_end(p, "#}");
      if (end != std::string::npos) {
        advance_to(end);
        return;
      }
    }
    raise(ErrorKind::Syntax, str("Missing end of comment tag (line ", line_, ")"));
  }

  void lex_raw() {
    for (size_t p = pos_; p < s_.size(); ++p) {
      if (!starts_with_at(s_, p, "{%")) continue;
      size_t q = p + 2;
      const char sign = (q < s_.size() && (s_[q] == '-' || s_[q] == '+')) ? s_[q++] : '\0';
      q += whitespace_run(s_, q);
      if (!starts_with_at(s_, q, "endraw")) continue;
      q += 6;
      q += whitespace_run(s_, q);
      const size_t end = q < s_.size() ? match_block_end(q, "%}") : std::string::npos;
      if (end == std::string::npos) continue;
      emit_text_before(s_.substr(pos_, p - pos_), sign, true);
      advance_to(end);
      return;
    }
    raise(ErrorKind::Syntax, str("Missing end of raw directive (line ", line_, ")"));
  }

  void lex_tag(bool block) {
    while (true) {
      if (pos_ >= s_.size())
        raise(ErrorKind::Syntax, str("unexpected end of template, expected '", block ? "end of statement block" : "end of print statement", "' (line ", line_, ")"));
      if (balance_.empty()) {
        size_t end = std::string::npos;
        if (block) {
          end = match_block_end(pos_, "%}");
        } else if (starts_with_at(s_, pos_, "-}}")) {
          end = pos_ + 3 + whitespace_run(s_, pos_ + 3);
        } else if (starts_with_at(s_, pos_, "}}")) {
          end = pos_ + 2;
        }
        if (end != std::string::npos) {
          push(block ? TokenType::BlockEnd : TokenType::VariableEnd, "");
          advance_to(end);
          return;
        }
      }
      lex_tag_token();
    }
  }

  void lex_tag_token() {
    const size_t ws = whitespace_run(s_, pos_);
    if (ws > 0) return advance_to(pos_ + ws);
    if (lex_number()) return;
    if (lex_name()) return;
    const char c = s_[pos_];
    if (c == '\'' || c == '"') return lex_string(c);
    lex_operator();
  }

  // jinja2's float_re, then integer_re.
  bool lex_number() {
    const char c = s_[pos_];
    if (!is_digit(c)) return false;
    if (pos_ > 0 && s_[pos_ - 1] == '.') {
      // (?<!\.) keeps `x.0.1` an attribute chain; integers still match
    } else if (size_t end = match_float(pos_); end != std::string::npos) {
      std::string text = s_.substr(pos_, end - pos_);
      std::string clean;
      for (char ch : text)
        if (ch != '_') clean += ch;
      Token t;
      t.type = TokenType::Float;
      t.text = text;
      t.float_value = std::stod(clean);
      t.line = line_;
      out_.push_back(t);
      advance_to(end);
      return true;
    }
    size_t end = pos_;
    int base = 10;
    auto digits_of = [&](size_t from, auto ok) {
      size_t p = from;
      while (true) {
        size_t q = p;
        if (q < s_.size() && s_[q] == '_') ++q;
        if (q < s_.size() && ok(s_[q])) p = q + 1;
        else break;
      }
      return p;
    };
    const char n1 = pos_ + 1 < s_.size() ? static_cast<char>(std::tolower(static_cast<unsigned char>(s_[pos_ + 1]))) : '\0';
    if (c == '0' && (n1 == 'b' || n1 == 'o' || n1 == 'x')) {
      base = n1 == 'b' ? 2 : n1 == 'o' ? 8 : 16;
      end = digits_of(pos_ + 2, [&](char ch) {
        if (base == 2) return ch == '0' || ch == '1';
        if (base == 8) return ch >= '0' && ch <= '7';
        return std::isxdigit(static_cast<unsigned char>(ch)) != 0;
      });
      if (end == pos_ + 2) end = pos_ + 1, base = 10;  // "0x" without digits: the integer 0
    } else if (c == '0') {
      end = digits_of(pos_ + 1, [](char ch) { return ch == '0'; });
    } else {
      end = digits_of(pos_ + 1, is_digit);
    }
    std::string clean;
    for (size_t i = pos_ + (base == 10 ? 0 : 2); i < end; ++i)
      if (s_[i] != '_') clean += s_[i];
    Token t;
    t.type = TokenType::Integer;
    t.text = s_.substr(pos_, end - pos_);
    try {
      t.int_value = std::stoll(clean, nullptr, base);
    } catch (const std::exception&) {
      raise(ErrorKind::Unsupported, str("integer literal ", t.text, " does not fit in 64 bits (line ", line_, ")"));
    }
    t.line = line_;
    out_.push_back(t);
    advance_to(end);
    return true;
  }

  // (\d+_)*\d+ ( (\.(\d+_)*\d+)? e[+-]?(\d+_)*\d+ | \.(\d+_)*\d+ )
  size_t match_float(size_t p) const {
    auto digit_run = [&](size_t q) -> size_t {  // (\d+_)*\d+ ; npos if none
      if (q >= s_.size() || !is_digit(s_[q])) return std::string::npos;
      while (true) {
        while (q < s_.size() && is_digit(s_[q])) ++q;
        if (q + 1 < s_.size() && s_[q] == '_' && is_digit(s_[q + 1])) {
          ++q;
          continue;
        }
        return q;
      }
    };
    auto exponent = [&](size_t q) -> size_t {
      if (q >= s_.size() || (s_[q] != 'e' && s_[q] != 'E')) return std::string::npos;
      ++q;
      if (q < s_.size() && (s_[q] == '+' || s_[q] == '-')) ++q;
      return digit_run(q);
    };
    size_t q = digit_run(p);
    if (q == std::string::npos) return q;
    size_t frac = std::string::npos;
    if (q < s_.size() && s_[q] == '.') frac = digit_run(q + 1);
    if (frac != std::string::npos) {
      size_t e = exponent(frac);
      return e != std::string::npos ? e : frac;
    }
    return exponent(q);
  }

  bool lex_name() {
    size_t p = pos_;
    while (p < s_.size()) {
      const unsigned char ch = static_cast<unsigned char>(s_[p]);
      if (ch < 0x80) {
        if (std::isalnum(ch) || ch == '_') {
          ++p;
          continue;
        }
        break;
      }
      size_t q = p;
      const char32_t cp = unicode::next_code_point(s_, q);
      if (!u_isalnum(static_cast<UChar32>(cp)) && !u_hasBinaryProperty(static_cast<UChar32>(cp), UCHAR_XID_CONTINUE)) break;
      p = q;
    }
    if (p == pos_ || is_digit(s_[pos_])) return false;
    push(TokenType::Name, s_.substr(pos_, p - pos_));
    advance_to(p);
    return true;
  }

  void lex_string(char quote) {
    size_t p = pos_ + 1;
    while (p < s_.size() && s_[p] != quote) p += s_[p] == '\\' ? 2 : 1;
    if (p >= s_.size()) raise(ErrorKind::Syntax, str("unexpected char ", py_str_repr(std::string(1, quote)), " at ", pos_, " (line ", line_, ")"));
    const int line = line_;
    Token t;
    t.type = TokenType::String;
    t.text = unescape(s_.substr(pos_ + 1, p - pos_ - 1), line);
    t.line = line;
    out_.push_back(t);
    advance_to(p + 1);
  }

  void lex_operator() {
    static const char* kTwo[] = {"**", "//", "==", "!=", ">=", "<="};
    for (const char* op : kTwo)
      if (starts_with_at(s_, pos_, op)) {
        push(TokenType::Operator, op);
        return advance_to(pos_ + 2);
      }
    const char c = s_[pos_];
    if (std::strchr("+-/*%~[](){}><=.:|,;", c) == nullptr) {
      size_t q = pos_;
      const char32_t cp = unicode::next_code_point(s_, q);
      raise(ErrorKind::Syntax, str("unexpected char ", py_str_repr(to_utf8(std::u32string(1, cp))), " at ", pos_, " (line ", line_, ")"));
    }
    if (c == '{' || c == '(' || c == '[') balance_.push_back(c == '{' ? '}' : c == '(' ? ')' : ']');
    if (c == '}' || c == ')' || c == ']') {
      if (balance_.empty()) raise(ErrorKind::Syntax, str("unexpected '", c, "' (line ", line_, ")"));
      const char want = balance_.back();
      balance_.pop_back();
      if (want != c) raise(ErrorKind::Syntax, str("unexpected '", c, "', expected '", want, "' (line ", line_, ")"));
    }
    push(TokenType::Operator, std::string(1, c));
    advance_to(pos_ + 1);
  }

  LexerOptions o_;
  std::string s_;
  size_t pos_ = 0;
  int line_ = 1;
  bool line_starting_ = true;
  std::vector<char> balance_;
  std::vector<Token> out_;
};

}  // namespace

std::vector<Token> tokenize(const std::string& source, const LexerOptions& options) {
  return Lexer(source, options).run();
}

std::string describe(const Token& t) {
  switch (t.type) {
    case TokenType::Eof: return "end of template";
    case TokenType::Data: return "template data / text";
    case TokenType::BlockBegin: return "begin of statement block";
    case TokenType::BlockEnd: return "end of statement block";
    case TokenType::VariableBegin: return "begin of print statement";
    case TokenType::VariableEnd: return "end of print statement";
    case TokenType::Name: return t.text;
    case TokenType::String: return "string";
    case TokenType::Integer: return "integer";
    case TokenType::Float: return "float";
    case TokenType::Operator: return t.text;
  }
  return "token";
}

}  // namespace rlf::jinja

// UTF-8 and Unicode helpers (see unicode_text.h).
#include "tokenizer/unicode_text.h"

#include <unicode/normalizer2.h>
#include <unicode/uchar.h>
#include <unicode/unistr.h>
#include <unicode/locid.h>

#include <array>

#include "util/error.h"

namespace rlf::unicode {

char32_t next_code_point(std::string_view s, size_t& pos) {
  auto b0 = static_cast<unsigned char>(s[pos]);
  size_t n = utf8_seq_len(b0);
  if (pos + n > s.size()) n = 1;
  char32_t cp;
  switch (n) {
    case 1: cp = b0; break;
    case 2: cp = ((b0 & 0x1Fu) << 6) | (static_cast<unsigned char>(s[pos + 1]) & 0x3Fu); break;
    case 3:
      cp = ((b0 & 0x0Fu) << 12) | ((static_cast<unsigned char>(s[pos + 1]) & 0x3Fu) << 6) |
           (static_cast<unsigned char>(s[pos + 2]) & 0x3Fu);
      break;
    default:
      cp = ((b0 & 0x07u) << 18) | ((static_cast<unsigned char>(s[pos + 1]) & 0x3Fu) << 12) |
           ((static_cast<unsigned char>(s[pos + 2]) & 0x3Fu) << 6) | (static_cast<unsigned char>(s[pos + 3]) & 0x3Fu);
  }
  pos += n;
  return cp;
}

void append_utf8(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

namespace {

// Length of the sequence a lead byte announces (0: never a valid lead), and
// the allowed range of the second byte (Unicode Table 3-7).
struct LeadInfo {
  int len;
  unsigned char lo, hi;
};

LeadInfo lead_info(unsigned char b) {
  if (b < 0x80) return {1, 0, 0};
  if (b >= 0xC2 && b <= 0xDF) return {2, 0x80, 0xBF};
  if (b == 0xE0) return {3, 0xA0, 0xBF};
  if ((b >= 0xE1 && b <= 0xEC) || b == 0xEE || b == 0xEF) return {3, 0x80, 0xBF};
  if (b == 0xED) return {3, 0x80, 0x9F};
  if (b == 0xF0) return {4, 0x90, 0xBF};
  if (b >= 0xF1 && b <= 0xF3) return {4, 0x80, 0xBF};
  if (b == 0xF4) return {4, 0x80, 0x8F};
  return {0, 0, 0};
}

// Number of bytes of a valid (possibly incomplete) sequence prefix at s[pos].
// Returns {valid_prefix_len, complete}.
std::pair<size_t, bool> scan_sequence(std::string_view s, size_t pos) {
  auto b0 = static_cast<unsigned char>(s[pos]);
  LeadInfo info = lead_info(b0);
  if (info.len == 0) return {0, false};
  if (info.len == 1) return {1, true};
  size_t n = 1;
  for (int k = 1; k < info.len; ++k) {
    if (pos + n >= s.size()) return {n, false};
    auto b = static_cast<unsigned char>(s[pos + n]);
    unsigned char lo = k == 1 ? info.lo : 0x80, hi = k == 1 ? info.hi : 0xBF;
    if (b < lo || b > hi) return {n, false};
    ++n;
  }
  return {n, true};
}

}  // namespace

bool is_valid_utf8(std::string_view s) {
  size_t pos = 0;
  while (pos < s.size()) {
    if (static_cast<unsigned char>(s[pos]) < 0x80) {
      ++pos;
      continue;
    }
    auto [n, complete] = scan_sequence(s, pos);
    if (!complete) return false;
    pos += n;
  }
  return true;
}

std::string from_utf8_lossy(std::string_view bytes) {
  if (is_valid_utf8(bytes)) return std::string(bytes);
  std::string out;
  out.reserve(bytes.size() + 8);
  size_t pos = 0;
  while (pos < bytes.size()) {
    auto [n, complete] = scan_sequence(bytes, pos);
    if (complete) {
      out.append(bytes.substr(pos, n));
      pos += n;
    } else {
      out += "\xEF\xBF\xBD";
      pos += n == 0 ? 1 : n;
    }
  }
  return out;
}

size_t incomplete_utf8_suffix(std::string_view s) {
  size_t n = s.size();
  for (size_t back = 1; back <= 3 && back <= n; ++back) {
    auto b = static_cast<unsigned char>(s[n - back]);
    if ((b & 0xC0) == 0x80) continue;  // continuation byte: keep looking for the lead
    auto [len, complete] = scan_sequence(s, n - back);
    return (!complete && len == back) ? back : 0;
  }
  return 0;
}

namespace {

struct ByteLevelTables {
  std::array<char32_t, 256> byte_to_cp{};
  std::array<std::string, 256> byte_to_utf8{};
  std::array<int16_t, 512> cp_to_byte{};  // every mapped code point is < 0x144
  ByteLevelTables() {
    cp_to_byte.fill(-1);
    int n = 0;
    for (int b = 0; b < 256; ++b) {
      bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
      byte_to_cp[b] = printable ? static_cast<char32_t>(b) : static_cast<char32_t>(256 + n++);
      cp_to_byte[byte_to_cp[b]] = static_cast<int16_t>(b);
      append_utf8(byte_to_utf8[b], byte_to_cp[b]);
    }
  }
};

const ByteLevelTables& byte_level_tables() {
  static const ByteLevelTables tables;
  return tables;
}

}  // namespace

char32_t byte_to_char(uint8_t b) { return byte_level_tables().byte_to_cp[b]; }

int char_to_byte(char32_t cp) { return cp < 512 ? byte_level_tables().cp_to_byte[cp] : -1; }

std::string bytes_to_byte_level(std::string_view bytes) {
  const auto& t = byte_level_tables();
  std::string out;
  out.reserve(bytes.size() * 2);
  for (char c : bytes) out += t.byte_to_utf8[static_cast<unsigned char>(c)];
  return out;
}

bool is_whitespace(char32_t cp) { return u_hasBinaryProperty(static_cast<UChar32>(cp), UCHAR_WHITE_SPACE); }

bool is_numeric(char32_t cp) {
  int8_t t = u_charType(static_cast<UChar32>(cp));
  return t == U_DECIMAL_DIGIT_NUMBER || t == U_LETTER_NUMBER || t == U_OTHER_NUMBER;
}

bool is_word_char(char32_t cp) {
  return cp == '_' || u_hasBinaryProperty(static_cast<UChar32>(cp), UCHAR_ALPHABETIC) || is_numeric(cp);
}

static bool is_ascii(std::string_view s) {
  for (char c : s)
    if (static_cast<unsigned char>(c) >= 0x80) return false;
  return true;
}

std::string normalize(std::string_view text, NormalForm form) {
  if (is_ascii(text)) return std::string(text);
  UErrorCode status = U_ZERO_ERROR;
  const icu::Normalizer2* norm = nullptr;
  switch (form) {
    case NormalForm::NFC: norm = icu::Normalizer2::getNFCInstance(status); break;
    case NormalForm::NFD: norm = icu::Normalizer2::getNFDInstance(status); break;
    case NormalForm::NFKC: norm = icu::Normalizer2::getNFKCInstance(status); break;
    case NormalForm::NFKD: norm = icu::Normalizer2::getNFKDInstance(status); break;
  }
  check(U_SUCCESS(status) && norm, "ICU: cannot get a normalizer: ", u_errorName(status));
  icu::UnicodeString in = icu::UnicodeString::fromUTF8(icu::StringPiece(text.data(), static_cast<int32_t>(text.size())));
  icu::UnicodeString out = norm->normalize(in, status);
  check(U_SUCCESS(status), "ICU: normalization failed: ", u_errorName(status));
  std::string result;
  out.toUTF8String(result);
  return result;
}

std::string to_lower(std::string_view text) {
  if (is_ascii(text)) {
    std::string out(text);
    for (char& c : out)
      if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    return out;
  }
  icu::UnicodeString s = icu::UnicodeString::fromUTF8(icu::StringPiece(text.data(), static_cast<int32_t>(text.size())));
  s.toLower(icu::Locale::getRoot());
  std::string result;
  s.toUTF8String(result);
  return result;
}

}  // namespace rlf::unicode

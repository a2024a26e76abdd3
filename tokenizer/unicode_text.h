// UTF-8 and Unicode helpers shared by the tokenizers: code point iteration,
// lossy UTF-8 repair (as Rust's String::from_utf8_lossy does), GPT-2's
// byte <-> printable-character map, Unicode normalization forms (ICU) and the
// character classes the pre-tokenizers need (whitespace, numeric).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace rlf::unicode {

// Length in bytes of the UTF-8 sequence that starts with `lead` (1 for an
// invalid lead byte, so iteration always advances).
inline size_t utf8_seq_len(unsigned char lead) {
  if (lead < 0x80) return 1;
  if ((lead >> 5) == 0x6) return 2;
  if ((lead >> 4) == 0xE) return 3;
  if ((lead >> 3) == 0x1E) return 4;
  return 1;
}

// Decodes the code point at `pos` of valid UTF-8 `s` and advances `pos`.
char32_t next_code_point(std::string_view s, size_t& pos);

// Appends the UTF-8 encoding of `cp` to `out`.
void append_utf8(std::string& out, char32_t cp);

// True when `s` is well-formed UTF-8.
bool is_valid_utf8(std::string_view s);

// Replaces each maximal invalid subsequence with U+FFFD (the "substitution of
// maximal subparts" rule, identical to Rust's String::from_utf8_lossy).
std::string from_utf8_lossy(std::string_view bytes);

// Number of bytes at the end of `s` that form the start of a UTF-8 sequence
// that is not yet complete (0 when `s` ends on a character boundary or with
// bytes that can never become valid).
size_t incomplete_utf8_suffix(std::string_view s);

// GPT-2 byte-level alphabet: each byte maps to one printable code point
// (printable Latin-1 bytes map to themselves, the rest to U+0100 + n).
char32_t byte_to_char(uint8_t b);
// Inverse of byte_to_char; returns -1 when `cp` is not in the alphabet.
int char_to_byte(char32_t cp);
// Every byte of `bytes` as its byte-level character, UTF-8 encoded.
std::string bytes_to_byte_level(std::string_view bytes);

// Unicode White_Space (as Rust's char::is_whitespace).
bool is_whitespace(char32_t cp);
// Numeric general category Nd, Nl or No (as Rust's char::is_numeric).
bool is_numeric(char32_t cp);
// Word character for single_word matching: alphanumeric or '_'.
bool is_word_char(char32_t cp);

enum class NormalForm { NFC, NFD, NFKC, NFKD };
// Normalizes valid UTF-8 text (ICU); ASCII input is returned unchanged.
std::string normalize(std::string_view text, NormalForm form);
// Full Unicode lowercase mapping (locale-independent).
std::string to_lower(std::string_view text);

}  // namespace rlf::unicode

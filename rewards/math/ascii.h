// Character classes of the math answer parsers, for bytes of UTF-8 text: true
// only for ASCII letters, digits and spaces (the C library's classes in the
// "C" locale), whatever the sign of `char`.
#pragma once

#include <cctype>

namespace rlf::math {

inline bool is_alpha(char c) { return std::isalpha(static_cast<unsigned char>(c)) != 0; }
inline bool is_digit(char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; }
inline bool is_space(char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; }

}  // namespace rlf::math

// Small string helpers shared across the project (one implementation each).
#pragma once

#include <string>
#include <string_view>

namespace rlf {

// Every occurrence of `key` in `text` replaced by `value`, left to right;
// what a replacement inserts is not searched again. An empty key changes nothing.
std::string replace_all(std::string text, std::string_view key, std::string_view value);

}  // namespace rlf

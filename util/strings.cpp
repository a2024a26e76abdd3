#include "util/strings.h"

namespace rlf {

std::string replace_all(std::string text, std::string_view key, std::string_view value) {
  if (key.empty()) return text;
  for (size_t at = text.find(key); at != std::string::npos; at = text.find(key, at + value.size()))
    text.replace(at, key.size(), value);
  return text;
}

}  // namespace rlf

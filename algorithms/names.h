// Name <-> enum tables for the algorithm enums, so a trainer config can name
// an estimator ("grpo", "k3", ...). Internal helper of rlf_algorithms: each
// enum's header declares parse_*/ *_name, its .cpp owns the one table.
#pragma once

#include <array>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "util/error.h"

namespace rlf::algo::detail {

template <typename E, std::size_t N>
using NameTable = std::array<std::pair<E, std::string_view>, N>;

// Returns the enum value named `name`, or throws
// "unknown <what> 'x'; expected one of: a, b, c".
template <typename E, std::size_t N>
E parse_name(const NameTable<E, N>& table, std::string_view what, std::string_view name) {
  for (const auto& [value, text] : table) {
    if (text == name) return value;
  }
  std::string expected;
  for (const auto& [value, text] : table) {
    if (!expected.empty()) expected += ", ";
    expected += text;
  }
  fail("unknown ", what, " '", name, "'; expected one of: ", expected);
}

template <typename E, std::size_t N>
std::string_view name_of(const NameTable<E, N>& table, E value) {
  for (const auto& [v, text] : table) {
    if (v == value) return text;
  }
  return "?";
}

// Every name of the table, in its order: a config key's accepted values.
template <typename E, std::size_t N>
std::vector<std::string> names_list(const NameTable<E, N>& table) {
  std::vector<std::string> out;
  for (const auto& [v, text] : table) out.emplace_back(text);
  return out;
}

}  // namespace rlf::algo::detail

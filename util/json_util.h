// JSON helpers over nlohmann::json with errors that name the file and field.
#pragma once

#include <cmath>
#include <type_traits>

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "util/error.h"

namespace rlf {

using Json = nlohmann::json;

// Parses `text`; a syntax error becomes rlf::Error naming `source` and the byte offset.
Json parse_json(const std::string& text, const std::string& source);

// Reads and parses a JSON file.
Json read_json_file(const std::string& path);

// `j` as one line of JSON; invalid UTF-8 in strings becomes U+FFFD instead of
// throwing (model output and user text are arbitrary bytes). Non-finite
// numbers are written as null (JSON has no NaN).
std::string json_line(const Json& j);

// Parses JSON as Python's json module writes it by default (json.dumps with
// allow_nan=True): besides standard JSON, the bare words NaN, Infinity and
// -Infinity outside strings are read as the doubles they name, so a program
// that prints float("nan") is understood and can be told what was wrong.
// Everything else is as strict as parse_json (errors name `source`).
Json parse_json_allowing_nan(const std::string& text, const std::string& source);
// The same, without throwing: a discarded value (is_discarded()) on error.
Json try_parse_json_allowing_nan(const std::string& text);

// `j` for messages: json_line, except that non-finite numbers are written as
// Python writes them (NaN, Infinity, -Infinity) instead of null.
std::string json_text_for_message(const Json& j);

namespace detail {
// An integer field must hold an integer: 5.5 is an error, never truncated to 5.
template <typename T>
void check_integral_field(const Json& v, const std::string& key, const std::string& source) {
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    check(v.is_number_integer() || (v.is_number_float() && std::trunc(v.get<double>()) == v.get<double>() &&
                                    std::abs(v.get<double>()) < 9.0e15),
          source, ": field '", key, "' must be an integer, got ", v.dump());
    if constexpr (std::is_unsigned_v<T>)
      check(!v.is_number_integer() || v.is_number_unsigned() || v.get<int64_t>() >= 0, source, ": field '", key,
            "' must be >= 0, got ", v.dump());
  }
}
}  // namespace detail

// Returns j[key] converted to T; throws naming `source` and `key` when the key
// is missing or has the wrong type (an integer field holding 5.5 included).
template <typename T>
T json_require(const Json& j, const std::string& key, const std::string& source) {
  check(j.is_object(), source, ": expected a JSON object");
  auto it = j.find(key);
  check(it != j.end() && !it->is_null(), source, ": missing required field '", key, "'");
  if (it->is_number()) detail::check_integral_field<T>(*it, key, source);
  try {
    return it->get<T>();
  } catch (const std::exception& e) {
    fail(source, ": field '", key, "' has the wrong type (", it->type_name(), "): ", e.what());
  }
}

// Like json_require but returns `fallback` when the key is missing or null.
template <typename T>
T json_get_or(const Json& j, const std::string& key, const T& fallback, const std::string& source) {
  if (!j.is_object()) return fallback;
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  if (it->is_number()) detail::check_integral_field<T>(*it, key, source);
  try {
    return it->get<T>();
  } catch (const std::exception& e) {
    fail(source, ": field '", key, "' has the wrong type (", it->type_name(), "): ", e.what());
  }
}

}  // namespace rlf

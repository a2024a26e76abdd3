// JSON helpers over nlohmann::json with errors that name the file and field.
#pragma once

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

// Returns j[key] converted to T; throws naming `source` and `key` when the key
// is missing or has the wrong type.
template <typename T>
T json_require(const Json& j, const std::string& key, const std::string& source) {
  check(j.is_object(), source, ": expected a JSON object");
  auto it = j.find(key);
  check(it != j.end() && !it->is_null(), source, ": missing required field '", key, "'");
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
  try {
    return it->get<T>();
  } catch (const std::exception& e) {
    fail(source, ": field '", key, "' has the wrong type (", it->type_name(), "): ", e.what());
  }
}

}  // namespace rlf

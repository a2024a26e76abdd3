// Typed access to tokenizer.json fields with errors that name the file and
// the dotted field path ("tokenizer.json 'x/tokenizer.json': field
// 'pre_tokenizer.pretokenizers[1].behavior' must be a string, got number").
// Internal to the tokenizer library.
#pragma once

#include <optional>
#include <string>

#include "tokenizer/unicode_text.h"
#include "util/error.h"
#include "util/json_util.h"

namespace rlf::tokjson {

// A JSON value together with where it sits: `file` ("tokenizer.json 'path'")
// and its dotted `path` inside the document.
struct Node {
  const Json& j;
  const std::string& file;
  std::string path;

  std::string field(const std::string& key) const { return path.empty() ? key : path + "." + key; }

  [[noreturn]] void error(const std::string& key, const std::string& what) const {
    fail(file, ": field '", field(key), "' ", what);
  }

  void require_object() const {
    if (!j.is_object()) fail(file, ": field '", path, "' must be an object, got ", j.type_name());
  }

  bool has(const std::string& key) const {
    auto it = j.find(key);
    return it != j.end() && !it->is_null();
  }

  Node child(const std::string& key) const {
    require_object();
    auto it = j.find(key);
    if (it == j.end() || it->is_null()) error(key, "is missing");
    return Node{*it, file, field(key)};
  }

  Node at(size_t index) const { return Node{j.at(index), file, path + "[" + std::to_string(index) + "]"}; }

  std::string str(const std::string& key) const {
    Node c = child(key);
    if (!c.j.is_string()) error(key, std::string("must be a string, got ") + c.j.type_name());
    return c.j.get<std::string>();
  }

  std::optional<std::string> opt_str(const std::string& key) const {
    require_object();
    if (!has(key)) return std::nullopt;
    return str(key);
  }

  bool boolean(const std::string& key, bool fallback) const {
    require_object();
    if (!has(key)) return fallback;
    const Json& v = j.at(key);
    if (!v.is_boolean()) error(key, std::string("must be a boolean, got ") + v.type_name());
    return v.get<bool>();
  }

  int64_t integer(const std::string& key, int64_t fallback, int64_t lo, int64_t hi) const {
    require_object();
    if (!has(key)) return fallback;
    const Json& v = j.at(key);
    if (!v.is_number_integer()) error(key, std::string("must be an integer, got ") + v.type_name());
    int64_t x = v.get<int64_t>();
    if (x < lo || x > hi) error(key, "is " + std::to_string(x) + ", outside [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
    return x;
  }

  Node array(const std::string& key) const {
    Node c = child(key);
    if (!c.j.is_array()) error(key, std::string("must be an array, got ") + c.j.type_name());
    return c;
  }

  // The single character of a one-character string field.
  std::string one_char(const std::string& key) const {
    std::string s = str(key);
    if (s.empty() || unicode::utf8_seq_len(static_cast<unsigned char>(s[0])) != s.size())
      error(key, "must be exactly one character, got '" + s + "'");
    return s;
  }
};

}  // namespace rlf::tokjson

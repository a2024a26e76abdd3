#include "config/toml_config.h"

#include <toml++/toml.h>

#include <sstream>

#include "util/error.h"
#include "util/fs.h"

namespace rlf {

namespace {

Json to_json(const toml::node& node) {
  switch (node.type()) {
    case toml::node_type::table: {
      Json out = Json::object();
      for (auto&& [key, value] : *node.as_table()) out[std::string(key.str())] = to_json(value);
      return out;
    }
    case toml::node_type::array: {
      Json out = Json::array();
      for (const toml::node& value : *node.as_array()) out.push_back(to_json(value));
      return out;
    }
    case toml::node_type::string: return Json(node.as_string()->get());
    case toml::node_type::integer: return Json(node.as_integer()->get());
    case toml::node_type::floating_point: return Json(node.as_floating_point()->get());
    case toml::node_type::boolean: return Json(node.as_boolean()->get());
    case toml::node_type::date: {
      std::ostringstream s;
      s << node.as_date()->get();
      return Json(s.str());
    }
    case toml::node_type::time: {
      std::ostringstream s;
      s << node.as_time()->get();
      return Json(s.str());
    }
    case toml::node_type::date_time: {
      std::ostringstream s;
      s << node.as_date_time()->get();
      return Json(s.str());
    }
    default: return Json();
  }
}

std::string trim(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  const size_t e = s.find_last_not_of(" \t");
  return s.substr(b, e - b + 1);
}

std::string key_list(const Json& obj) {
  std::string out;
  for (const auto& [k, v] : obj.items()) out += (out.empty() ? "" : ", ") + k;
  return out.empty() ? "none" : out;
}

bool is_index(const std::string& s) {
  return !s.empty() && s.size() < 10 && s.find_first_not_of("0123456789") == std::string::npos;
}

}  // namespace

Json parse_toml(const std::string& text, const std::string& source) {
  try {
    toml::table table = toml::parse(std::string_view(text), std::string_view(source));
    return to_json(table);
  } catch (const toml::parse_error& e) {
    const auto& where = e.source().begin;
    fail(source, ":", where.line, ":", where.column, ": ", e.description());
  }
}

Json read_toml_file(const std::filesystem::path& path) { return parse_toml(read_file(path), path.string()); }

Json parse_override_value(const std::string& text) {
  const std::string t = trim(text);
  try {
    const std::string doc = "v = " + t;
    toml::table table = toml::parse(std::string_view(doc), std::string_view("--set"));
    return to_json(*table.get("v"));
  } catch (const toml::parse_error& e) {
    // Text that starts like a structured value must parse as one.
    const bool structured = !t.empty() && (t[0] == '[' || t[0] == '{' || t[0] == '"' || t[0] == '\'');
    check(!structured, "cannot parse '", t, "' as a TOML value (column ", e.source().begin.column - 4, "): ",
          e.description());
    return Json(t);
  }
}

void apply_override(Json& config, const std::string& assignment, bool allow_new_keys) {
  with_context("--set " + assignment, [&] {
    const size_t eq = assignment.find('=');
    check(eq != std::string::npos, "expected KEY=VALUE (e.g. --set optimizer.lr=1e-6)");
    const std::string path = trim(assignment.substr(0, eq));
    check(!path.empty(), "the key is empty (expected KEY=VALUE)");
    std::vector<std::string> parts;
    std::string part;
    std::istringstream in(path);
    while (std::getline(in, part, '.')) {
      check(!trim(part).empty(), "key '", path, "' has an empty component");
      parts.push_back(trim(part));
    }
    if (path.back() == '.') fail("key '", path, "' has an empty component");
    const Json value = parse_override_value(assignment.substr(eq + 1));
    if (!config.is_object()) config = Json::object();
    Json* node = &config;
    std::string at;  // the path walked so far
    for (size_t i = 0; i < parts.size(); ++i) {
      const std::string& p = parts[i];
      const bool last = i + 1 == parts.size();
      const std::string where = at.empty() ? "the top level" : "'" + at + "'";
      const std::string full = at.empty() ? p : at + "." + p;
      if (node->is_array()) {
        check(is_index(p), "'", at, "' is an array of ", node->size(), " elements: '", p, "' is not an index");
        const size_t idx = std::stoul(p);
        check(idx < node->size(), "index ", idx, " is out of range: '", at, "' has ", node->size(), " elements");
        node = &(*node)[idx];
      } else {
        check(node->is_object(), "'", at, "' is a ", node->type_name(), ", not a table: cannot set '", full, "'");
        if (!node->contains(p)) {
          check(allow_new_keys, "unknown key '", full, "' (keys in ", where, ": ", key_list(*node), ")");
          (*node)[p] = last ? Json() : Json::object();
        }
        node = &(*node)[p];
      }
      at = full;
    }
    *node = value;
  });
}

void apply_overrides(Json& config, const std::vector<std::string>& assignments, bool allow_new_keys) {
  for (const std::string& a : assignments) apply_override(config, a, allow_new_keys);
}

}  // namespace rlf

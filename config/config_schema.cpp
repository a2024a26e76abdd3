#include "config/config_schema.h"

#include <algorithm>
#include <map>
#include <cmath>
#include <set>
#include <sstream>

#include "util/error.h"

namespace rlf {

namespace {

// The value as written in TOML (JSON's spelling of scalars and flat arrays is
// valid TOML; JSON has no NaN or infinity, which it would print as null).
bool non_finite(const Json& x) { return x.is_number_float() && !std::isfinite(x.get<double>()); }

std::string toml_text(const Json& v) {
  if (non_finite(v)) return std::isnan(v.get<double>()) ? "nan" : v.get<double>() > 0 ? "inf" : "-inf";
  if (!v.is_array() || std::none_of(v.begin(), v.end(), non_finite)) return json_line(v);
  std::string out;
  for (const Json& x : v) out += (out.empty() ? "[" : ",") + toml_text(x);
  return out.empty() ? "[]" : out + "]";
}

std::string describe(const Json& v) {
  const char* t = v.is_number_integer() ? "integer" : v.is_number_float() ? "float" : v.type_name();
  return std::string(t) + " " + toml_text(v);
}

bool is_int(const Json& v) { return v.is_number_integer(); }

std::string range_text(double x) {
  if (std::abs(x) < 9.3e18 && std::trunc(x) == x) return std::to_string(static_cast<int64_t>(x));
  std::ostringstream s;
  s << x;
  return s.str();
}

bool matches(const Json& v, OptionType type) {
  auto all = [&](auto pred) { return v.is_array() && std::all_of(v.begin(), v.end(), pred); };
  switch (type) {
    case OptionType::Bool: return v.is_boolean();
    case OptionType::Int: return is_int(v);
    case OptionType::Float: return v.is_number();
    case OptionType::String: return v.is_string();
    case OptionType::IntList: return all([](const Json& x) { return is_int(x); });
    case OptionType::FloatList: return all([](const Json& x) { return x.is_number(); });
    case OptionType::StringList: return all([](const Json& x) { return x.is_string(); });
    case OptionType::Any: return true;
  }
  return false;
}

Json example_value(const SchemaEntry& e) {
  if (!e.default_value.is_null() && matches(e.default_value, e.type)) return e.default_value;
  switch (e.type) {
    case OptionType::Bool: return true;
    case OptionType::Int: return 1;
    case OptionType::Float: return 0.5;
    case OptionType::String: return e.choices.empty() ? Json("text") : Json(e.choices.front());
    case OptionType::IntList: return Json::array({1, 2});
    case OptionType::FloatList: return Json::array({0.5, 1.0});
    case OptionType::StringList: return Json::array({"a", "b"});
    case OptionType::Any: return Json::object();
  }
  return nullptr;
}

std::string join(const std::vector<std::string>& items, const std::string& sep) {
  std::string out;
  for (const auto& s : items) out += (out.empty() ? "" : sep) + s;
  return out;
}

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

struct Index {
  std::map<std::string, const SchemaEntry*> leaves;         // full key -> entry
  std::map<std::string, std::vector<std::string>> children;  // table path ("" = top) -> child names, sorted
};

Index build_index(const ConfigSchema& schema) {
  Index idx;
  std::map<std::string, std::set<std::string>> children;
  for (const auto& e : schema) {
    idx.leaves[e.key] = &e;
    std::string parent;
    size_t start = 0;
    while (true) {
      const size_t dot = e.key.find('.', start);
      const std::string name = e.key.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
      children[parent].insert(name);
      if (dot == std::string::npos) break;
      parent = e.key.substr(0, dot);
      start = dot + 1;
    }
  }
  for (auto& [k, v] : children) idx.children[k] = std::vector<std::string>(v.begin(), v.end());
  return idx;
}

void check_value(const Json& v, const SchemaEntry& e, const std::string& source) {
  if (!matches(v, e.type)) {
    fail(source, ": key '", e.key, "' must be ", e.type == OptionType::Int ? "an " : "a ", option_type_name(e.type),
         ", got ", describe(v), " (e.g. ", e.key, " = ", toml_text(example_value(e)), ")");
  }
  if (e.type == OptionType::String && !e.choices.empty() &&
      std::find(e.choices.begin(), e.choices.end(), v.get<std::string>()) == e.choices.end()) {
    fail(source, ": key '", e.key, "' must be one of ", join(e.choices, ", "), ", got ", toml_text(v));
  }
  auto is_nan = [](const Json& x) { return x.is_number_float() && std::isnan(x.get<double>()); };
  const bool has_nan = is_nan(v) || (v.is_array() && std::any_of(v.begin(), v.end(), is_nan));
  if (has_nan && (e.type == OptionType::Float || e.type == OptionType::FloatList))
    fail(source, ": key '", e.key, "' must be a number, got ", toml_text(v), " (e.g. ", e.key, " = ",
         toml_text(example_value(e)), ")");
  if (e.range && (e.type == OptionType::Int || e.type == OptionType::Float)) {
    const double x = v.get<double>();
    if (!(x >= e.range->first && x <= e.range->second))
      fail(source, ": key '", e.key, "' must be in [", range_text(e.range->first), ", ", range_text(e.range->second),
           "], got ", toml_text(v));
  }
}

void walk(const Json& node, const std::string& path, const Index& idx, const std::string& source) {
  for (const auto& [name, value] : node.items()) {
    const std::string full = path.empty() ? name : path + "." + name;
    auto leaf = idx.leaves.find(full);
    if (leaf != idx.leaves.end()) {
      check_value(value, *leaf->second, source);
      continue;
    }
    auto table = idx.children.find(full);
    if (table != idx.children.end()) {
      check(value.is_object(), source, ": key '", full, "' must be a table (of ", join(table->second, ", "),
            "), got ", describe(value));
      walk(value, full, idx, source);
      continue;
    }
    const std::vector<std::string>& valid = idx.children.at(path);
    std::string hint;
    for (const auto& v : valid) {
      if (edit_distance(name, v) <= 2) {
        hint = "did you mean '" + (path.empty() ? v : path + "." + v) + "'?; ";
        break;
      }
    }
    fail(source, ": unknown key '", full, "' (", hint, "valid keys in ",
         path.empty() ? std::string("the top level") : "'" + path + "'", ": ", join(valid, ", "), ")");
  }
}

}  // namespace

std::string option_type_name(OptionType type) {
  switch (type) {
    case OptionType::Bool: return "bool";
    case OptionType::Int: return "int";
    case OptionType::Float: return "float";
    case OptionType::String: return "string";
    case OptionType::IntList: return "int list";
    case OptionType::FloatList: return "float list";
    case OptionType::StringList: return "string list";
    case OptionType::Any: return "any";
  }
  return "?";
}

void check_schema(const ConfigSchema& schema) {
  std::set<std::string> keys;
  for (const auto& e : schema) {
    check(!e.key.empty() && e.key.front() != '.' && e.key.back() != '.' && e.key.find("..") == std::string::npos,
          "config schema: bad key '", e.key, "'");
    check(keys.insert(e.key).second, "config schema: key '", e.key, "' is declared twice");
    check(e.choices.empty() || e.type == OptionType::String, "config schema: key '", e.key,
          "' has choices but is not a string");
    check(!e.range || ((e.type == OptionType::Int || e.type == OptionType::Float) && e.range->first <= e.range->second),
          "config schema: key '", e.key, "' has a range but is not a number, or an inverted one");
    if (!e.default_value.is_null()) {
      try {
        check_value(e.default_value, e, "config schema default");
      } catch (const Error& err) {
        fail("config schema: the default of '", e.key, "' does not validate: ", err.what());
      }
    }
  }
  for (const auto& k : keys) {
    for (size_t dot = k.find('.'); dot != std::string::npos; dot = k.find('.', dot + 1)) {
      check(!keys.count(k.substr(0, dot)), "config schema: '", k.substr(0, dot), "' is both a value and the table of '",
            k, "'");
    }
  }
}

Json validate_config(const Json& config, const ConfigSchema& schema, const std::string& source) {
  check_schema(schema);
  const Json& in = config.is_null() ? Json::object() : config;
  check(in.is_object(), source, ": the configuration must be a table, got ", in.type_name());
  const Index idx = build_index(schema);
  walk(in, "", idx, source);
  Json out = in;
  for (const auto& e : schema) {
    const Json::json_pointer ptr("/" + [&] {
      std::string p = e.key;
      std::replace(p.begin(), p.end(), '.', '/');
      return p;
    }());
    if (out.contains(ptr)) {
      if (e.type == OptionType::Float && out[ptr].is_number_integer()) out[ptr] = out[ptr].get<double>();
      if (e.type == OptionType::FloatList) {
        for (auto& x : out[ptr]) x = x.get<double>();
      }
      continue;
    }
    check(!e.default_value.is_null(), source, ": missing required key '", e.key, "' (", e.help, ")");
    out[ptr] = e.default_value;
  }
  return out;
}

std::string schema_markdown(const ConfigSchema& schema) {
  check_schema(schema);
  auto cell = [](std::string s) {
    std::string out;
    for (char c : s) {
      if (c == '|') out += "\\|";
      else if (c == '\n') out += ' ';
      else out += c;
    }
    return out;
  };
  std::string md = "| key | type | default | unit | meaning |\n|---|---|---|---|---|\n";
  for (const auto& e : schema) {
    std::string help = e.help;
    if (!e.choices.empty()) {
      std::vector<std::string> quoted;
      for (const auto& c : e.choices) quoted.push_back("`" + c + "`");
      if (!help.empty()) help += help.back() == '.' ? " " : ". ";
      help += "One of: " + join(quoted, ", ") + ".";
    }
    if (e.range) {
      if (!help.empty()) help += help.back() == '.' ? " " : ". ";
      help += "In [" + range_text(e.range->first) + ", " + range_text(e.range->second) + "].";
    }
    const std::string def = e.default_value.is_null() ? "required" : "`" + toml_text(e.default_value) + "`";
    md += "| `" + e.key + "` | " + option_type_name(e.type) + " | " + cell(def) + " | " + cell(e.unit) + " | " +
          cell(help) + " |\n";
  }
  return md;
}

std::string schema_toml_template(const ConfigSchema& schema) {
  check_schema(schema);
  std::string out, table;
  for (const auto& e : schema) {
    const auto dot = e.key.find('.');
    const std::string t = dot == std::string::npos ? "" : e.key.substr(0, dot);
    const std::string name = dot == std::string::npos ? e.key : e.key.substr(dot + 1);
    if (t != table || out.empty()) {
      if (!out.empty()) out += "\n";
      if (!t.empty()) out += "[" + t + "]\n";
      table = t;
    }
    std::string comment = e.help;
    if (!e.unit.empty()) comment += " [" + e.unit + "]";
    if (!e.choices.empty()) comment += " (one of: " + join(e.choices, ", ") + ")";
    if (e.type == OptionType::Any) {
      out += "# " + name + ": " + comment + "\n";
    } else if (e.default_value.is_null()) {
      out += "# " + name + " = ...  # required: " + comment + "\n";
    } else {
      out += name + " = " + toml_text(e.default_value) + "  # " + comment + "\n";
    }
  }
  return out;
}

}  // namespace rlf

// Option lookups that remember every key asked for, so finish() can list the valid ones.
#include "rewards/reward_options.h"

#include <algorithm>
#include <cmath>

namespace rlf {

std::string join_names(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

OptionReader::OptionReader(const Json& table, std::string type, std::string where, std::string kind,
                           std::vector<std::string> set_keys)
    : table_(table.is_null() ? Json::object() : table),
      type_(std::move(type)),
      where_(std::move(where)),
      kind_(std::move(kind)),
      set_keys_(set_keys.empty() ? reward_set_keys() : std::move(set_keys)) {
  check(table_.is_object(), context(), ": options must be a table (JSON object), got ", table_.type_name());
  for (const std::string& key : set_keys_) known_.insert(key);
}

std::string OptionReader::context() const {
  return where_.empty() ? str(kind_, " '", type_, "'") : str(where_, ": ", kind_, " '", type_, "'");
}

const Json* OptionReader::find(const std::string& key) {
  known_.insert(key);
  auto it = table_.find(key);
  return it == table_.end() || it->is_null() ? nullptr : &*it;
}

bool OptionReader::has(const std::string& key) { return find(key) != nullptr; }

void OptionReader::wrong_type(const std::string& key, const char* expected, const Json& value) const {
  std::string shown = json_line(value);
  if (shown.size() > 60) shown = shown.substr(0, 60) + "...";
  fail(context(), ": option '", key, "' must be ", expected, ", got ", value.type_name(), " ", shown);
}

bool OptionReader::get_bool(const std::string& key, bool fallback) {
  const Json* v = find(key);
  if (!v) return fallback;
  if (!v->is_boolean()) wrong_type(key, "true or false", *v);
  return v->get<bool>();
}

int64_t OptionReader::get_int(const std::string& key, int64_t fallback) {
  const Json* v = find(key);
  if (!v) return fallback;
  if (v->is_number_integer()) return v->get<int64_t>();
  if (v->is_number_float()) {  // 4.0 from a TOML/JSON writer is fine; 4.5 is not
    double d = v->get<double>();
    if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9e15) return int64_t(d);
  }
  wrong_type(key, "an integer", *v);
}

double OptionReader::get_double(const std::string& key, double fallback) {
  const Json* v = find(key);
  if (!v) return fallback;
  if (!v->is_number()) wrong_type(key, "a number", *v);
  return v->get<double>();
}

std::string OptionReader::get_string(const std::string& key, const std::string& fallback) {
  const Json* v = find(key);
  if (!v) return fallback;
  if (!v->is_string()) wrong_type(key, "a string", *v);
  return v->get<std::string>();
}

std::vector<std::string> OptionReader::get_strings(const std::string& key, const std::vector<std::string>& fallback) {
  const Json* v = find(key);
  if (!v) return fallback;
  if (!v->is_array()) wrong_type(key, "a list of strings", *v);
  std::vector<std::string> out;
  for (const Json& item : *v) {
    if (!item.is_string()) wrong_type(key, "a list of strings", *v);
    out.push_back(item.get<std::string>());
  }
  return out;
}

std::vector<double> OptionReader::get_doubles(const std::string& key, const std::vector<double>& fallback) {
  const Json* v = find(key);
  if (!v) return fallback;
  if (!v->is_array()) wrong_type(key, "a list of numbers", *v);
  std::vector<double> out;
  for (const Json& item : *v) {
    if (!item.is_number()) wrong_type(key, "a list of numbers", *v);
    out.push_back(item.get<double>());
  }
  return out;
}

void OptionReader::finish() const {
  for (auto it = table_.begin(); it != table_.end(); ++it) {
    if (known_.count(it.key())) continue;
    std::vector<std::string> valid;
    for (const std::string& k : known_) {
      if (std::find(set_keys_.begin(), set_keys_.end(), k) == set_keys_.end()) {
        valid.push_back(k);
      }
    }
    fail(context(), ": unknown option '", it.key(), "'; valid options: ", valid.empty() ? "(none)" : join_names(valid),
         " (and ", join_names(set_keys_), ")");
  }
}

}  // namespace rlf

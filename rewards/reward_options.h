// Reading a reward's options from its config table (a JSON object, e.g. one
// [[reward]] table of config.toml) with errors that name the table, the key
// and the fix. Each reward's options parser asks for every key it knows, with
// its default; finish() then rejects any key nobody asked for, listing the
// valid ones. Keys that belong to the reward set, not to one reward ("type",
// "name", "weight"), are always allowed.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "util/json_util.h"

namespace rlf {

class OptionReader {
 public:
  // `table` must be a JSON object (or null = no options); `type` is the reward
  // type ("math"), `where` the table's place ("config.toml [[reward]] #2").
  // `kind` names what is configured in messages ("reward type", "environment
  // type"); `set_keys` are the keys the enclosing table reads itself (always
  // accepted, listed apart in messages; default: reward_set_keys()).
  OptionReader(const Json& table, std::string type, std::string where, std::string kind = "reward type",
               std::vector<std::string> set_keys = {});

  // The value of `key`, or `fallback` when absent. Throws rlf::Error when the
  // value has the wrong JSON type ("option 'workers' must be an integer, got
  // string \"4\"").
  bool get_bool(const std::string& key, bool fallback);
  int64_t get_int(const std::string& key, int64_t fallback);
  double get_double(const std::string& key, double fallback);
  std::string get_string(const std::string& key, const std::string& fallback);
  std::vector<std::string> get_strings(const std::string& key, const std::vector<std::string>& fallback);
  std::vector<double> get_doubles(const std::string& key, const std::vector<double>& fallback);

  // True when the table sets `key` (and marks it known).
  bool has(const std::string& key);

  // Throws rlf::Error for the first key no getter asked for.
  void finish() const;

  // "config.toml [[reward]] #2: reward type 'math'" — the prefix of every error.
  std::string context() const;

 private:
  const Json* find(const std::string& key);
  [[noreturn]] void wrong_type(const std::string& key, const char* expected, const Json& value) const;

  Json table_;
  std::string type_;
  std::string where_;
  std::string kind_;
  std::vector<std::string> set_keys_;
  std::set<std::string> known_;
};

// Keys every reward table may carry, read by the reward set.
inline const std::vector<std::string>& reward_set_keys() {
  static const std::vector<std::string> keys = {"name",   "type",     "weight",         "clip",       "center",
                                                "gate",   "gate_min", "constraint_max", "lambda_init", "lambda_lr"};
  return keys;
}

// Joins names with ", " ("a, b, c").
std::string join_names(const std::vector<std::string>& names);

}  // namespace rlf

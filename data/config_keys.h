// Config tables: rejecting keys an Options struct does not have, so a typo
// ("shufle") is an error naming the key instead of a silently ignored setting.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include "util/json_util.h"

namespace rlf {

// Throws rlf::Error naming `source` when `table` is not an object or has a
// key outside `known` ("<source>: unknown key 'x' (expected one of a, b)").
inline void check_known_keys(const Json& table, const std::vector<std::string>& known, const std::string& source) {
  check(table.is_object(), source, ": expected a table");
  for (const auto& [key, _] : table.items()) {
    if (std::find(known.begin(), known.end(), key) != known.end()) continue;
    std::string list;
    for (const std::string& k : known) list += (list.empty() ? "" : ", ") + k;
    fail(source, ": unknown key '", key, "' (expected one of ", list, ")");
  }
}

}  // namespace rlf

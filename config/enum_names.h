// The names of an `enum class` option, declared once: the config key's
// accepted values (the schema's choices), the name written for a value (its
// default in docs/config.md), and the parse with an error naming the key.
//
//   enum class RaftKeep { Best, All };
//   const EnumNames<RaftKeep>& raft_keep_names() {
//     static const EnumNames<RaftKeep> names{"raft.keep", {{RaftKeep::Best, "best"}, {RaftKeep::All, "all"}}};
//     return names;
//   }
//   raft_keep_names().parse("most");  // "raft.keep must be one of best, all (got \"most\")"
//
// A config binds such a member with choice(key, unit, help, RLF_MEMBER(...),
// names) (config/config_binding.h).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "util/error.h"

namespace rlf {

template <class E>
struct EnumNames {
  std::string key;                            // the config key, for errors ("raft.keep")
  std::vector<std::pair<E, std::string>> names;  // every value with its name, in the order docs list them

  const std::string& name(E value) const {
    for (const auto& [v, n] : names)
      if (v == value) return n;
    fail(key, ": a value without a name (", static_cast<int>(value), ")");
  }

  E parse(const std::string& text) const {
    for (const auto& [v, n] : names)
      if (n == text) return v;
    std::string accepted;
    for (const auto& [v, n] : names) accepted += (accepted.empty() ? "" : ", ") + n;
    fail(key, " must be one of ", accepted, " (got \"", text, "\")");
  }

  std::vector<std::string> choices() const {
    std::vector<std::string> out;
    for (const auto& [v, n] : names) out.push_back(n);
    return out;
  }
};

}  // namespace rlf

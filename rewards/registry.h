// Rewards by name, from config tables. A config lists its rewards as an
// array of tables, each with a type, an optional name and weight, and the
// type's options (docs/rewards.md lists them all):
//   [{"type": "math", "name": "correct", "weight": 1.0, "answer_format": "gsm8k"},
//    {"type": "format", "preset": "think_answer", "weight": 0.2}]
// An unknown type or option is an error naming it, the valid ones, and
// `where` ("config.toml [[reward]] #2").
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "rewards/reward.h"
#include "rewards/reward_set.h"

namespace rlf {

// The reward types, sorted: code, countdown, env, external, format, keywords, length, math.
const std::vector<std::string>& reward_types();

// Builds one reward from its options table (the keys type, name and weight
// are allowed and ignored here). Throws rlf::Error prefixed with `where` and
// the type for an unknown type or option, a wrong option type or value, or a
// reward that cannot start (no sandbox, a scorer command that does not run).
std::unique_ptr<Reward> make_reward(const std::string& type, const Json& options, const std::string& where);

// Builds the set from an array of tables. Table k (1-based) is described as
// `where` + " [[reward]] #k". Names default to the type; weights to 1.0.
RewardSet make_reward_set(const Json& reward_tables, const std::string& where = "config");

}  // namespace rlf

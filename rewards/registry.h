// Rewards by name, from config tables. A config lists its rewards as an
// array of tables, each with a type, an optional name and weight, and the
// type's options (docs/rewards.md lists them all):
//   [{"type": "math", "name": "correct", "weight": 1.0, "answer_format": "gsm8k"},
//    {"type": "format", "preset": "think_answer", "weight": 0.2}]
// An unknown type or option is an error naming it, the valid ones, and
// `where` ("config.toml [[reward]] #2").
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "rewards/reward.h"
#include "rewards/reward_options.h"
#include "rewards/reward_set.h"

namespace rlf {

// Reward types built outside this torch-free library (reward models,
// rm/model_reward.h), passed in by the program that links them: type ->
// factory. A factory reads its options from the reader (and calls finish()).
using RewardFactory = std::function<std::unique_ptr<Reward>(OptionReader&)>;
using RewardFactories = std::map<std::string, RewardFactory>;

// The reward types, sorted: bleu, chrf, code, countdown, env, external, format,
// keywords, length, majority, math, rouge_l (and those of `extra`).
std::vector<std::string> reward_types(const RewardFactories& extra = {});

// Builds one reward from its options table (the keys type, name and weight
// are allowed and ignored here). Throws rlf::Error prefixed with `where` and
// the type for an unknown type or option, a wrong option type or value, or a
// reward that cannot start (no sandbox, a scorer command that does not run).
std::unique_ptr<Reward> make_reward(const std::string& type, const Json& options, const std::string& where,
                                    const RewardFactories& extra = {});

// Builds the set from an array of tables. Table k (1-based) is described as
// `where` + " [[reward]] #k". Names default to the type; weights to 1.0.
RewardSet make_reward_set(const Json& reward_tables, const std::string& where = "config",
                          const RewardFactories& extra = {});

}  // namespace rlf

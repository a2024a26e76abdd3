// Environments by name, from the run config's [env] table:
//
//   [env]
//   type = "calculator"           # single_turn (default) | calculator | guess | try_again | reflect_retry | external | agent
//   max_turns = 4                 # policy turns per episode at most
//   max_observation_tokens = 64   # an observation is cut to its first N tokens
//   max_episode_tokens = 0        # tokens after the prompt; 0 = derived (env/episode_producer.h)
//   weight = 1.0                  # weight of the reward component "env" (environments that give rewards)
//   ...                           # the type's own options (docs/environments.md)
//
// An unknown type or option is an error naming it, the valid ones and `where`.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "env/environment.h"
#include "env/episode_producer.h"
#include "util/json_util.h"

namespace rlf {

struct EnvConfig {
  std::string type = "single_turn";
  double reward_weight = 1.0;  // weight of the reward component "env"
  bool gives_rewards = false;  // the environment's steps give rewards (guess; external unless gives_rewards = false)
  EpisodeOptions episode;      // max_turns, max_observation_tokens, max_episode_tokens (max_batch_rows and
                               // add_special_tokens come from elsewhere in the run config)
  Json table = Json::object(); // the whole table, for the type's options
};

// The types, sorted: agent, calculator, external, guess, reflect_retry, single_turn, try_again.
const std::vector<std::string>& environment_types();

// Reads and checks the table (every option of the type included), starting
// nothing. A null or empty table is the single-turn environment.
EnvConfig env_config_from_json(const Json& table, const std::string& where);

// Builds the environment (an external one starts its program here).
std::unique_ptr<Environment> make_environment(const EnvConfig& config, const std::string& where);

}  // namespace rlf

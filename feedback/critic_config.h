// Critics by type, from a run config's [critic] table (docs/feedback.md):
//
//   [critic]
//   type = "simple_gt"     # simple | simple_gt | text | template | columns | self | model | endpoint
//   # template: correct_text, incorrect_text
//   # self (the policy), model (path = another model directory, tokenizer):
//   #   prompt, max_new_tokens, temperature, stop, seed
//   # endpoint: base_url, model, api_key_env, timeout_s, max_retries, backoff_s,
//   #   max_concurrency, cache_dir, system, prompt, probe
//
// Unknown types and keys are errors naming them and the valid ones.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "feedback/critic.h"
#include "rollout/policy.h"
#include "util/json_util.h"

namespace rlf {

struct CriticConfig {
  std::string type = "simple_gt";
  Json table = Json::object();  // the whole table, for the type's options
};

// The types, sorted.
const std::vector<std::string>& critic_types();

// Reads and checks the table (every option of the type), starting nothing.
// A null or empty table is the default ("simple_gt").
CriticConfig critic_config_from_json(const Json& table, const std::string& where);

// Reads an environment variable (the CLI passes getenv; tests a map).
using EnvLookup = std::function<std::optional<std::string>(const std::string& name)>;

// Builds the critic. `policy` is the policy ("self" borrows it); "model"
// loads its own model; "endpoint" reads its API key through `read_env`
// (api_key_env names the variable; unset is an error naming it) and probes
// the endpoint. Errors name `where` and the key.
std::unique_ptr<Critic> make_critic(const CriticConfig& config, Policy& policy, const EnvLookup& read_env,
                                    const std::string& where);

}  // namespace rlf

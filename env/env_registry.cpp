#include "env/env_registry.h"

#include <cmath>
#include <functional>
#include <map>

#include "env/agent_env.h"
#include "env/calculator_env.h"
#include "env/external_env.h"
#include "env/guess_env.h"
#include "env/reflect_retry_env.h"
#include "env/try_again_env.h"
#include "env/single_turn_env.h"
#include "env/tool_env.h"
#include "rewards/reward_options.h"
#include "util/error.h"

namespace rlf {

namespace {

using Maker = std::function<std::unique_ptr<Environment>()>;
using Parser = std::function<Maker(OptionReader&, EnvConfig&)>;

const std::map<std::string, Parser>& parsers() {
  static const std::map<std::string, Parser> table = {
      {"single_turn", [](OptionReader&, EnvConfig&) -> Maker { return [] { return std::make_unique<SingleTurnEnvironment>(); }; }},
      {"calculator",
       [](OptionReader& r, EnvConfig&) -> Maker {
         CalculatorOptions o;
         o.max_calls = r.get_int("max_calls", o.max_calls);
         return [o] { return std::make_unique<CalculatorEnvironment>(o); };
       }},
      {"guess",
       [](OptionReader& r, EnvConfig& c) -> Maker {
         c.gives_rewards = true;
         GuessOptions o;
         o.win_reward = r.get_double("win_reward", o.win_reward);
         o.turn_penalty = r.get_double("turn_penalty", o.turn_penalty);
         return [o] { return std::make_unique<GuessEnvironment>(o); };
       }},
      {"try_again",
       [](OptionReader& r, EnvConfig& c) -> Maker {
         TryAgainOptions o;
         o.message = r.get_string("message", o.message);
         o.turn_penalty = r.get_double("turn_penalty", o.turn_penalty);
         if (r.has("verifier")) o.verifier = c.table.at("verifier");
         check(std::isfinite(o.turn_penalty) && o.turn_penalty >= 0, "option 'turn_penalty' must be >= 0 (got ",
               o.turn_penalty, ")");
         c.gives_rewards = o.turn_penalty > 0;
         const std::string where = r.context();
         TryAgainEnvironment check_now(o, where);  // a bad verifier fails at load
         return [o, where] { return std::make_unique<TryAgainEnvironment>(o, where); };
       }},
      {"reflect_retry",
       [](OptionReader& r, EnvConfig& c) -> Maker {
         ReflectRetryOptions o;
         o.reflect_message = r.get_string("reflect_message", o.reflect_message);
         o.retry_message = r.get_string("retry_message", o.retry_message);
         o.train = r.get_string("train", o.train);
         o.reflection_bonus = r.get_double("reflection_bonus", o.reflection_bonus);
         o.reflection_target_chars = r.get_int("reflection_target_chars", o.reflection_target_chars);
         c.gives_rewards = o.reflection_bonus > 0;
         if (r.has("verifier")) o.verifier = c.table.at("verifier");
         check(c.episode.max_turns >= 3, "option 'max_turns' must be >= 3 (answer, reflection, retry), got ",
               c.episode.max_turns);
         const std::string where = r.context();
         ReflectRetryEnvironment check_now(o, where);
         return [o, where] { return std::make_unique<ReflectRetryEnvironment>(o, where); };
       }},
      {"agent",
       [](OptionReader& r, EnvConfig& c) -> Maker {
         AgentEnvOptions o;
         o.command = r.get_strings("command", o.command);
         o.timeout_s = r.get_double("timeout_s", o.timeout_s);
         o.chat_template = r.get_string("chat_template", o.chat_template);
         o.working_dir = r.get_string("working_dir", o.working_dir);
         o.echo_stderr = r.get_bool("echo_stderr", o.echo_stderr);
         o.host = r.get_string("host", o.host);
         o.max_agents = r.get_int("max_agents", o.max_agents);
         o.validate();
         c.gives_rewards = true;
         return [o] { return std::make_unique<AgentEnvironment>(o); };
       }},
      {"tools",
       [](OptionReader& r, EnvConfig&) -> Maker {
         ToolEnvOptions o;
         o.tools = r.get_strings("tools", o.tools);
         o.external_command = r.get_strings("external_command", o.external_command);
         o.external_timeout_s = r.get_double("external_timeout_s", o.external_timeout_s);
         o.chat_template = r.get_string("chat_template", o.chat_template);
         o.tool_parser = r.get_string("tool_parser", o.tool_parser);
         o.stop = r.get_strings("stop", o.stop);
         o.max_calls = r.get_int("max_calls", o.max_calls);
         o.system_prompt = r.get_string("system_prompt", o.system_prompt);
         o.date = r.get_string("date", o.date);
         o.python_timeout_s = r.get_double("python_timeout_s", o.python_timeout_s);
         o.validate();
         return [o] { return std::make_unique<ToolEnvironment>(o); };
       }},
      {"external",
       [](OptionReader& r, EnvConfig& c) -> Maker {
         ExternalEnvOptions o;
         o.command = r.get_strings("command", o.command);
         o.timeout_s = r.get_double("timeout_s", o.timeout_s);
         o.working_dir = r.get_string("working_dir", o.working_dir);
         o.echo_stderr = r.get_bool("echo_stderr", o.echo_stderr);
         o.send_record = r.get_bool("send_record", o.send_record);
         o.gives_rewards = r.get_bool("gives_rewards", o.gives_rewards);
         c.gives_rewards = o.gives_rewards;
         o.shutdown_grace_s = r.get_double("shutdown_grace_s", o.shutdown_grace_s);
         check(!o.command.empty(), "option 'command' is required: the program to run, e.g. command = [\"python3\", \"env.py\"]");
         check(o.timeout_s > 0 && std::isfinite(o.timeout_s), "option 'timeout_s' must be > 0 (got ", o.timeout_s, ")");
         check(o.shutdown_grace_s >= 0 && std::isfinite(o.shutdown_grace_s), "option 'shutdown_grace_s' must be >= 0 (got ",
               o.shutdown_grace_s, ")");
         return [o] { return std::make_unique<ExternalEnvironment>(o); };
       }},
  };
  return table;
}

// Reads the generic keys and the type's options; returns the type's maker.
Maker parse(const Json& in, const std::string& where, EnvConfig* out) {
  const Json table = in.is_null() ? Json::object() : in;
  check(table.is_object(), where, ": [env] must be a table, got ", table.type_name());
  EnvConfig c;
  c.table = table;
  if (auto t = table.find("type"); t != table.end()) {
    check(t->is_string(), where, ": env.type must be a string (one of ", join_names(environment_types()), ")");
    c.type = t->get<std::string>();
  }
  auto it = parsers().find(c.type);
  check(it != parsers().end(), where, ": unknown environment type '", c.type, "'; valid types: ",
        join_names(environment_types()));
  check(!table.contains("name"), where, ": env.name is not an option (the reward component is always \"env\")");
  OptionReader r(table, c.type, where, "environment type", {"type", "weight"});
  c.reward_weight = r.get_double("weight", c.reward_weight);
  c.episode.max_turns = r.get_int("max_turns", c.episode.max_turns);
  c.episode.max_observation_tokens = r.get_int("max_observation_tokens", c.episode.max_observation_tokens);
  c.episode.max_episode_tokens = r.get_int("max_episode_tokens", c.episode.max_episode_tokens);
  Maker maker;
  try {
    check(std::isfinite(c.reward_weight), "option 'weight' must be a finite number");
    c.episode.validate();
    maker = it->second(r, c);
    r.finish();
  } catch (const std::exception& e) {
    std::string message = e.what();
    if (message.rfind(r.context(), 0) == 0) throw;
    throw Error(r.context() + ": " + message);
  }
  if (out) *out = std::move(c);
  return maker;
}

}  // namespace

const std::vector<std::string>& environment_types() {
  static const std::vector<std::string> types = [] {
    std::vector<std::string> out;
    for (const auto& [name, p] : parsers()) out.push_back(name);
    return out;
  }();
  return types;
}

EnvConfig env_config_from_json(const Json& table, const std::string& where) {
  EnvConfig c;
  parse(table, where, &c);
  return c;
}

std::unique_ptr<Environment> make_environment(const EnvConfig& config, const std::string& where) {
  Maker maker = parse(config.table, where, nullptr);
  std::unique_ptr<Environment> env;
  try {
    env = maker();
  } catch (const std::exception& e) {
    throw Error(str(where, ": environment type '", config.type, "': ", e.what()));
  }
  return env;
}

}  // namespace rlf

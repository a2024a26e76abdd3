#include "feedback/critic_config.h"

#include "feedback/columns_critic.h"

#include <map>

#include "feedback/endpoint_critic.h"
#include "feedback/model_critic.h"
#include "feedback/template_critic.h"
#include "rewards/reward_options.h"
#include "util/error.h"

namespace rlf {

namespace {

// A model critic that owns the model it reads.
class LoadedModelCritic final : public Critic {
 public:
  LoadedModelCritic(Policy model, ModelCriticOptions options)
      : model_(std::make_unique<Policy>(std::move(model))), critic_(*model_, std::move(options)) {}
  std::string name() const override { return "model"; }
  std::vector<Critique> critique(const std::vector<CritiqueRequest>& r) override { return critic_.critique(r); }

 private:
  std::unique_ptr<Policy> model_;
  ModelCritic critic_;
};

struct Parsed {
  std::string type;
  TemplateCriticOptions templ;
  ModelCriticOptions model;
  std::string model_path, tokenizer_path;
  EndpointCriticOptions endpoint;
  std::string api_key_env;
};

Parsed parse(const Json& in, const std::string& where) {
  const Json table = in.is_null() ? Json::object() : in;
  check(table.is_object(), where, ": [critic] must be a table, got ", table.type_name());
  Parsed p;
  p.type = "simple_gt";
  if (auto t = table.find("type"); t != table.end()) {
    check(t->is_string(), where, ": critic.type must be a string (one of ", join_names(critic_types()), ")");
    p.type = t->get<std::string>();
  }
  const auto& types = critic_types();
  check(std::find(types.begin(), types.end(), p.type) != types.end(), where, ": unknown critic type '", p.type,
        "'; valid types: ", join_names(types));
  OptionReader r(table, p.type, where, "critic type", {"type"});
  try {
    if (p.type == "columns") {
      // no options
    } else if (p.type == "simple" || p.type == "simple_gt" || p.type == "text" || p.type == "template") {
      p.templ.kind = p.type;
      if (p.type == "template") {
        p.templ.correct_text = r.get_string("correct_text", p.templ.correct_text);
        p.templ.incorrect_text = r.get_string("incorrect_text", p.templ.incorrect_text);
      }
      p.templ.validate("critic.");
    } else if (p.type == "self" || p.type == "model") {
      ModelCriticOptions& m = p.model;
      m.prompt = r.get_string("prompt", m.prompt);
      m.max_new_tokens = r.get_int("max_new_tokens", m.max_new_tokens);
      m.temperature = r.get_double("temperature", m.temperature);
      m.stop = r.get_strings("stop", m.stop);
      m.seed = static_cast<uint64_t>(r.get_int("seed", static_cast<int64_t>(m.seed)));
      if (p.type == "model") {
        p.model_path = r.get_string("path", "");
        p.tokenizer_path = r.get_string("tokenizer", "");
        check(!p.model_path.empty(), "critic.path is required for type = \"model\": the critic's model directory");
      }
      m.validate("critic.");
    } else {  // endpoint
      EndpointCriticOptions& e = p.endpoint;
      e.client.base_url = r.get_string("base_url", e.client.base_url);
      e.client.model = r.get_string("model", e.client.model);
      p.api_key_env = r.get_string("api_key_env", "");
      e.client.timeout_s = r.get_double("timeout_s", e.client.timeout_s);
      e.client.max_retries = r.get_int("max_retries", e.client.max_retries);
      e.client.backoff_s = r.get_double("backoff_s", e.client.backoff_s);
      e.client.max_concurrency = r.get_int("max_concurrency", e.client.max_concurrency);
      e.client.max_tokens = r.get_int("max_tokens", e.client.max_tokens);
      e.client.temperature = r.get_double("temperature", e.client.temperature);
      e.client.cache_dir = r.get_string("cache_dir", e.client.cache_dir);
      e.system = r.get_string("system", e.system);
      e.prompt = r.get_string("prompt", e.prompt);
      e.probe = r.get_bool("probe", e.probe);
      check(!e.client.base_url.empty(), "critic.base_url is required for type = \"endpoint\" (e.g. ",
            "base_url = \"http://127.0.0.1:8000/v1\")");
      check(!e.client.model.empty(), "critic.model is required for type = \"endpoint\" (the endpoint's model name)");
      e.validate("critic.");
    }
    r.finish();
  } catch (const std::exception& e) {
    std::string message = e.what();
    if (message.rfind(r.context(), 0) == 0) throw;
    throw Error(r.context() + ": " + message);
  }
  return p;
}

}  // namespace

const std::vector<std::string>& critic_types() {
  static const std::vector<std::string> kTypes = {"columns", "endpoint", "model", "self", "simple", "simple_gt",
                                                  "template", "text"};
  return kTypes;
}

CriticConfig critic_config_from_json(const Json& table, const std::string& where) {
  CriticConfig c;
  c.type = parse(table, where).type;
  c.table = table.is_null() ? Json::object() : table;
  return c;
}

std::unique_ptr<Critic> make_critic(const CriticConfig& config, Policy& policy, const EnvLookup& read_env,
                                    const std::string& where) {
  Parsed p = parse(config.table, where);
  return with_context(str(where, ": critic type '", p.type, "'"), [&]() -> std::unique_ptr<Critic> {
    if (p.type == "self") return std::make_unique<ModelCritic>(policy, p.model);
    if (p.type == "model") {
      LoadOptions lo;
      lo.device = policy.model()->device().str();
      Policy critic_model = load_policy(p.model_path, p.tokenizer_path, lo);
      critic_model.model()->eval();
      return std::make_unique<LoadedModelCritic>(std::move(critic_model), p.model);
    }
    if (p.type == "endpoint") {
      if (!p.api_key_env.empty()) {
        std::optional<std::string> key = read_env ? read_env(p.api_key_env) : std::nullopt;
        check(key && !key->empty(), "critic.api_key_env names the environment variable ", p.api_key_env,
              ", which is not set (export it, or leave api_key_env out for an endpoint without a key)");
        p.endpoint.client.api_key = *key;
      }
      return std::make_unique<EndpointCritic>(p.endpoint);
    }
    if (p.type == "columns") return std::make_unique<ColumnsCritic>();
    return std::make_unique<TemplateCritic>(p.templ);
  });
}

}  // namespace rlf

// Eval configs: schema, validation, default rewards, flags -> config, the run.
#include "eval/eval_config.h"

#include <algorithm>
#include <cmath>

#include "config/toml_config.h"
#include "model/cpu_features.h"
#include "rewards/registry.h"
#include "rewards/reward_options.h"
#include "util/error.h"

namespace rlf {

namespace {

// The reward types an eval config may name: the registry's and the run set-up's factories.
std::vector<std::string> eval_reward_types() {
  return reward_types(run_reward_factories({}, std::make_shared<CausalLM>(nullptr)));
}

const std::vector<std::string>& eval_sections() {
  static const std::vector<std::string> sections = {"model", "data", "reward", "env", "eval"};
  return sections;
}

bool is_eval_section(const std::string& key) {
  for (const std::string& s : eval_sections())
    if (s == key) return true;
  return false;
}

bool is_synthetic_preset(const std::string& name) {
  for (const DatasetPreset& p : dataset_presets())
    if (p.name == name) return p.synthetic;
  return false;
}

// The keys of model.*, data, env and reward, each bound to its EvalConfig member.
const ConfigBindings<EvalConfig>& eval_config_bindings() {
  static const ConfigBindings<EvalConfig> bindings = {
      field("model.path", "", "the model: a Hugging Face directory or a llama2.c .bin", RLF_MEMBER(model.path)),
      field("model.tokenizer", "", "tokenizer.json, a directory with one, or a llama2.c tok*.bin; \"\" = the model's own",
            RLF_MEMBER(model.tokenizer)),
      field("model.dtype", "",
            "compute dtype; auto (\"\" too) = bf16 on a GPU, fp32 on a CPU (the fast ones for decoding: "
            "model/cpu_features.h)",
            RLF_MEMBER(model.dtype), {"", "fp32", "bf16", "fp16", "auto"}),
      field("model.device", "", "where the model runs: cpu, cuda or cuda:N", RLF_MEMBER(model.device)),
      field("model.adapter", "",
            "a LoRA adapter directory (PEFT layout, e.g. RUN/checkpoints/step-N/adapter) merged into model.path first; "
            "\"\" = none",
            RLF_MEMBER(model.adapter)),
      field("model.fast_cpu_path", "", "fp32 on CPU: fused kernels (docs/DESIGN.md); read so a training config evaluates as is",
            RLF_MEMBER(model.fast_cpu_path)),
      field("model.pack_weights", "",
            "fp32 on CPU: decode with a copy of the weights packed into column panels (faster; the weights' size again "
            "in memory while it runs); false = no copy",
            RLF_MEMBER(model.pack_weights)),
      field("model.random_init", "",
            "a training config's random initial model: evaluate one of its checkpoints with --set model.path=...",
            RLF_MEMBER(model.random_init)),
      section("data", nullptr, "the prompt dataset table: path, preset, ... (docs/data.md)",
              [](EvalConfig& c, const Json& v, const std::string& source) {
                c.data = prompt_dataset_options_from_json(v, source + " [data]");
              }),
      section("env", Json::object(), "the environment episodes run in (docs/environments.md); none = single-turn",
              [](EvalConfig& c, const Json& v, const std::string& source) {
                c.env = env_config_from_json(v, source + " [env]");
              }),
      section("reward", Json::array(), "[[reward]] tables (docs/rewards.md); none = the preset's default",
              [](EvalConfig& c, const Json& v, const std::string&) { c.rewards = v; }),
  };
  return bindings;
}

}  // namespace

const ConfigSchema& eval_config_schema() {
  static const ConfigSchema schema = [] {
    ConfigSchema s = schema_of(eval_config_bindings());
    for (const SchemaEntry& e : eval_options_schema()) s.push_back(e);
    check_schema(s);
    return s;
  }();
  return schema;
}

EvalConfig eval_config_from_json(const Json& config, const std::string& source) {
  check(config.is_object(), source, ": expected a table of sections, got ", config.type_name());
  Json sections = Json::object();
  for (const std::string& key : eval_sections())
    if (config.contains(key)) sections[key] = config[key];
  const Json v = validate_config(sections, eval_config_schema(), source);

  EvalConfig c;
  c.source = source;
  apply_bindings(eval_config_bindings(), v, c, source);
  check(!c.model.path.empty(), source, ": key 'model.path' is empty (a Hugging Face directory or a llama2.c .bin",
        c.model.random_init.empty() ? "" : "; this run starts from a random model: evaluate a "
        "checkpoint with --set model.path=RUN/checkpoints/step-N/model", ")");
  c.model.dtype = resolve_dtype(c.model.dtype.empty() ? "auto" : c.model.dtype, c.model.device, DtypeUse::Decoding);
  check(c.rewards.is_array(), source, ": 'reward' must be an array of tables ([[reward]] in TOML), got ",
        c.rewards.type_name());
  if (c.rewards.empty() && !c.env.gives_rewards)
    c.rewards = with_context(source, [&] { return default_reward_tables(c.data.preset); });
  c.eval = eval_options_from_json(v["eval"], source);
  return c;
}

EvalConfig read_eval_config(const std::filesystem::path& path, const std::vector<std::string>& overrides) {
  Json config = read_toml_file(path);
  for (const std::string& assignment : overrides) {
    const std::string key = assignment.substr(0, assignment.find('='));
    const std::string section = key.substr(0, key.find('.'));
    check(is_eval_section(section), "--set '", assignment, "': eval reads only the sections model, data, reward, env and eval",
          " (e.g. --set eval.n_samples=8)");
  }
  apply_overrides(config, overrides, /*allow_new_keys=*/true);
  return eval_config_from_json(config, path.string());
}

Json default_reward_tables(const std::string& preset) {
  if (preset == "gsm8k" || preset == "math500" || preset == "arithmetic") return Json::array({{{"type", "math"}}});
  if (preset == "countdown") return Json::array({{{"type", "countdown"}}});
  fail("no reward configured and preset '", preset, "' has no default reward; add a [[reward]] table or --reward TYPE (",
       join_names(eval_reward_types()), ")");
}

const std::vector<PromptExample>& eval_split(const PromptDataset& dataset) {
  return dataset.eval().empty() ? dataset.train() : dataset.eval();
}

Json eval_config_json_from_flags(const EvalFlags& f) {
  check(!f.model.empty(), "rlf eval: --model PATH is required (or --config FILE)");
  std::vector<std::string> names;
  for (const DatasetPreset& p : dataset_presets()) names.push_back(p.name);
  if (!f.preset.empty()) {
    check(std::find(names.begin(), names.end(), f.preset) != names.end(), "rlf eval: unknown --preset '", f.preset,
          "' (expected ", join_names(names), ")");
  }
  if (f.data.empty()) {
    check(!f.preset.empty(), "rlf eval: give --data FILE (with --preset gsm8k, math500 or generic) or a synthetic ",
          "--preset arithmetic or countdown");
    check(is_synthetic_preset(f.preset), "rlf eval: --preset ", f.preset, " needs --data FILE (a JSONL or JSONL.gz file)");
  } else {
    check(f.preset.empty() || !is_synthetic_preset(f.preset), "rlf eval: --preset ", f.preset,
          " generates its own problems; remove --data");
  }
  const std::vector<std::string> types = eval_reward_types();
  for (const std::string& t : f.rewards)
    check(std::find(types.begin(), types.end(), t) != types.end(), "rlf eval: unknown --reward '", t,
          "' (expected one of ", join_names(types), ")");

  Json model = {{"path", f.model}, {"device", f.device}};
  if (!f.tokenizer.empty()) model["tokenizer"] = f.tokenizer;
  if (!f.adapter.empty()) model["adapter"] = f.adapter;
  if (!f.dtype.empty()) model["dtype"] = f.dtype;
  Json data = Json::object();
  if (!f.data.empty()) data["path"] = f.data;
  if (!f.preset.empty()) data["preset"] = f.preset;
  Json rewards = Json::array();
  for (const std::string& t : f.rewards) rewards.push_back({{"type", t}});
  return {{"model", model}, {"data", data}, {"reward", rewards}, {"eval", f.eval}};
}

RunSpec run_spec_of(const EvalConfig& config, const ReadEnvironment& read_env) {
  RunSpec spec;
  spec.policy.path = config.model.path;
  spec.policy.tokenizer = config.model.tokenizer;
  spec.policy.dtype = config.model.dtype;
  spec.policy.device = config.model.device;
  spec.policy.fast_cpu_path = config.model.fast_cpu_path;
  spec.policy.pack_weights = config.model.pack_weights;
  spec.policy.adapter = config.model.adapter;
  spec.policy.adapter_key = "--adapter (model.adapter)";
  spec.data = config.data;
  spec.rewards = config.rewards;
  spec.env = config.env;
  spec.source = config.source;
  spec.read_env = read_env;
  return spec;
}

EvalRun run_eval(const EvalConfig& config, const EvalProgress& progress, const ReadEnvironment& read_env) {
  RunSetup s = load_run_setup(run_spec_of(config, read_env));
  const std::vector<PromptExample>& prompts = eval_split(*s.data);
  check_records(prompts, s.rewards, s.env.get());
  EvalRun run;
  run.data_summary = s.data->summary();
  run.result = evaluate(s.policy, prompts, s.rewards, config.eval, progress,
                        EvalEnvironment{s.env.get(), config.env.episode});
  return run;
}

}  // namespace rlf

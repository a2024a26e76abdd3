// rlf reflexion: K attempts per task with reflections in memory and no weight
// update (feedback/reflexion.h); accuracy per attempt.
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <optional>

#include "apps/cli/commands.h"
#include "apps/cli/runtime.h"
#include "feedback/critic_config.h"
#include "feedback/reflexion.h"
#include "setup/run_setup.h"
#include "train/run_context.h"
#include "train/train_config.h"

namespace rlf::cli {

namespace {

// The critic when the config has no [critic]: the policy reflects on its own answer.
const char* kSelfReflection =
    "{prompt}{response}\nThat is not right. In one sentence, what went wrong?\n";

}  // namespace

CommandSpec make_reflexion_command() {
  CommandSpec c;
  c.name = "reflexion";
  c.summary = "K attempts per task with reflections in memory, no weight update; accuracy per attempt";
  c.usage = "CONFIG.toml";
  c.n_positional_min = c.n_positional_max = 1;
  OptionSpec attempts{"attempts", OptKind::Int, "3", "attempts per task", "N"};
  attempts.min = 1;
  attempts.max = 100;
  OptionSpec memory_size{"memory-size", OptKind::Int, "3", "reflections kept per task", "N"};
  memory_size.min = 1;
  memory_size.max = 1000;
  OptionSpec lessons{"lessons", OptKind::Int, "0",
                     "show the N lessons of the most similar tasks from a pool shared across tasks (LANPO-style) "
                     "instead of the task's own reflections; 0 = the task's own",
                     "N"};
  lessons.min = 0;
  lessons.max = 100;
  OptionSpec pool_size{"pool-size", OptKind::Int, "256", "lessons kept in the pool (with --lessons)", "N"};
  pool_size.min = 1;
  pool_size.max = 1e6;
  OptionSpec limit{"limit", OptKind::Int, "0", "use the first N tasks of the split (0 = all)", "N"};
  limit.min = 0;
  limit.max = 1e9;
  c.options = {
      attempts, memory_size, lessons, pool_size, limit,
      {"split", OptKind::String, "eval", "the dataset split to attempt: eval (held out) or train", "SPLIT"},
      {"memory", OptKind::String, "", "a reflection memory (or, with --lessons, lesson pool) file: read when it exists, "
       "written at the end", "FILE"},
      {"set", OptKind::List, "", "override a config key, e.g. --set model.path=runs/x/checkpoints/step-100/model",
       "KEY=VALUE"},
      {"json", OptKind::Flag, "false", "print one JSON object: accuracy per attempt", ""},
  };
  c.run = [](const Args& a) {
    TrainConfig cfg = load_train_config(a.positional().at(0), a.list("set"));
    configure_threads(a, cfg.model.dtype, cfg.model.device);
    check(cfg.has_data, a.positional().at(0), ": rlf reflexion needs [data] (the tasks)");
    check(!cfg.rewards.empty(), a.positional().at(0), ": rlf reflexion needs a [[reward]] to judge attempts");
    const std::string split = a.str("split");
    check(split == "eval" || split == "train", "--split must be eval or train (got \"", split, "\")");
    check(cfg.model.random_init.empty() || std::filesystem::exists(cfg.model_path() / "config.json"),
          "the config's model is model.random_init, which exists only after `rlf train`: pass --set ",
          "model.random_init=\"\" --set model.path=RUN_DIR/checkpoints/step-N/model");
    // The training run's set-up (setup/run_setup.h), for inference.
    RunSetup setup = load_run_setup(reflexion_spec_of(cfg, read_process_env));
    Policy& policy = setup.policy;
    RewardSet& rewards = setup.rewards;
    std::vector<PromptExample> tasks = split == "eval" ? setup.data->eval() : setup.data->train();
    check(!tasks.empty(), "the ", split, " split is empty (set data.eval_size for a held-out split)");
    if (a.integer("limit") > 0 && static_cast<int64_t>(tasks.size()) > a.integer("limit"))
      tasks.resize(static_cast<size_t>(a.integer("limit")));
    check_records(tasks, rewards, setup.env.get());
    const EnvLookup read_env = read_process_env;
    const Json critic_table = cfg.raw.at("critic").empty()
                                  ? Json{{"type", "self"}, {"prompt", kSelfReflection}, {"max_new_tokens", 48},
                                         {"stop", std::vector<std::string>{"\n"}}}
                                  : cfg.raw.at("critic");
    std::unique_ptr<Critic> critic =
        make_critic(critic_config_from_json(critic_table, cfg.source + " [critic]"), policy, read_env,
                    cfg.source + " [critic]");
    std::unique_ptr<FeedbackMemory> memory;
    if (a.integer("lessons") > 0) {
      LessonPoolOptions lo;
      lo.k = a.integer("lessons");
      lo.capacity = a.integer("pool-size");
      const std::string source = cfg.data.path.empty() ? "preset " + cfg.data.preset
                                                       : std::filesystem::path(cfg.data.path).filename().string();
      memory = std::make_unique<LessonPool>(lo, source);
    } else {
      memory = std::make_unique<ReflectionMemory>(a.integer("memory-size"));
    }
    std::map<std::string, std::string> prompts;
    for (const PromptExample& t : tasks) prompts[t.id] = t.prompt;
    const std::string memory_path = a.str("memory");
    if (!memory_path.empty() && std::filesystem::exists(memory_path)) memory->load(memory_path, prompts);
    ReflexionOptions o;
    o.attempts = a.integer("attempts");
    o.sampling.max_new_tokens = cfg.rl.sampling.max_new_tokens;
    o.sampling.stop_strings = cfg.rl.sampling.stop_strings;
    o.add_special_tokens = cfg.rl.add_special_tokens;
    o.max_batch_rows = cfg.rl.max_batch_rows;
    o.aggregation = cfg.rl.reward_aggregation;
    o.seed = cfg.run.seed;
    if (!cfg.rl.accuracy_reward.empty())
      o.accuracy_component = rewards.index_of(cfg.rl.accuracy_reward, "algorithm.accuracy_reward");
    ReflexionResult r = run_reflexion(policy, tasks, rewards, *critic, *memory, o);
    if (!memory_path.empty()) memory->save(memory_path);
    Json j = r.to_json();
    j["critic"] = critic->name();
    j["memory"] = memory_path;
    j["memory_size"] = memory->size();
    j["memory_kind"] = a.integer("lessons") > 0 ? "lessons" : "per_task";
    if (a.flag("json")) {
      std::cout << j.dump() << "\n";
    } else {
      std::cout << "| attempt | tried | solved | accuracy (solved so far) | reflections written | critic failures |\n"
                   "|---|---|---|---|---|---|\n";
      for (const ReflexionAttempt& x : r.attempts)
        std::printf("| %lld | %lld | %lld | %.3f | %lld | %lld |\n", static_cast<long long>(x.attempt),
                    static_cast<long long>(x.n_tried), static_cast<long long>(x.n_solved), x.accuracy,
                    static_cast<long long>(x.n_reflections), static_cast<long long>(x.n_critic_failures));
    }
    return 0;
  };
  return c;
}

}  // namespace rlf::cli

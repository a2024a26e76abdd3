// rlf train: a whole RL run from a TOML config (see train/train_run.h and train/train_config.cpp).
#include <algorithm>
#include <cstdlib>
#include <memory>
#include <thread>
#include <optional>
#include <iostream>

#include "apps/cli/commands.h"
#include "apps/cli/runtime.h"
#include "model/loader.h"
#include "train/c10d_reducer.h"
#include "train/memory_plan.h"
#include "train/train_run.h"
#include "util/memory_usage.h"

namespace rlf::cli {

namespace {

// rlf train --dry-run: the memory plan, and what would bring it under the limit.
int dry_run(const TrainConfig& cfg, const Args& a) {
  check(cfg.model.random_init.empty() || std::filesystem::exists(cfg.model_path() / "config.json"),
        "--dry-run needs the model's config.json (model.random_init writes it at the run's start)");
  const ModelConfig model = check_model_files(cfg.model_path());
  const int64_t usable = usable_memory_bytes();
  const double limit = a.number("memory-limit-mb") > 0 ? a.number("memory-limit-mb") : usable / 1e6;
  const int64_t prompt = a.integer("prompt-tokens");
  const MemoryPlan plan = plan_memory(cfg, model, usable, prompt);
  const std::vector<std::string> advice = memory_advice(cfg, model, limit, usable, prompt);
  if (a.flag("json")) {
    Json j = plan.to_json();
    j["limit_mb"] = limit;
    j["fits"] = plan.peak_mb() <= limit;
    j["advice"] = advice;
    std::cout << j.dump() << "\n";
    return 0;
  }
  std::cout << plan.table();
  if (plan.peak_mb() <= limit) {
    std::cout << "fits under " << static_cast<int64_t>(limit) << " MB\n";
  } else {
    std::cout << "over " << static_cast<int64_t>(limit) << " MB; settings that bring it down, in order:\n";
    for (const std::string& s : advice) std::cout << "  " << s << "\n";
  }
  return 0;
}

}  // namespace

CommandSpec make_train_command() {
  CommandSpec c;
  c.name = "train";
  c.summary = "train a policy from a TOML config: RL through an environment (trainer.kind = grpo), SFT, or DPO on preference pairs";
  c.usage = "CONFIG.toml";
  c.n_positional_min = c.n_positional_max = 1;
  c.options = {
      {"set", OptKind::List, "", "override a config key, e.g. --set rollout.group_size=4 --set optim.lr=1e-5", "KEY=VALUE"},
      {"resume", OptKind::Flag, "false", "continue from the newest checkpoint in run.out_dir", ""},
      {"quiet", OptKind::Flag, "false", "no progress bar or summary table", ""},
      {"json", OptKind::Flag, "false", "print the run summary as one JSON object at the end", ""},
      {"dry-run", OptKind::Flag, "false", "estimate the run's peak memory without loading weights, and exit (train/memory_plan.h)", ""},
      {"memory-limit-mb", OptKind::Float, "0", "with --dry-run: the settings that bring the estimate under this (0 = this machine's usable memory)", "MB", 0, 1e12},
      {"prompt-tokens", OptKind::Int, "256", "with --dry-run: the prompt length assumed", "N", 1, 1e7},
  };
  c.run = [](const Args& a) {
    TrainConfig cfg = load_train_config(a.positional().at(0), a.list("set"));
    if (a.flag("dry-run")) return dry_run(cfg, a);
    // Launched as one of several ranks (torchrun's variables): join the others first.
    const std::optional<DistEnv> dist = DistEnv::from_environment();
    std::unique_ptr<Reducer> reducer;
    if (dist && dist->world_size > 1) {
      // CUDA ranks: one GPU per rank on its machine, cuda:LOCAL_RANK, unless the config names one.
      if (cfg.model.device == "cuda") cfg.model.device = "cuda:" + std::to_string(dist->local_rank);
      reducer = make_c10d_reducer(*dist, cfg.dist, parse_device(cfg.model.device));
    }
    const int64_t local_ranks = dist ? dist->local_world_size : 1;
    if (a.given("threads")) {
      configure_threads(a, cfg.model.dtype, cfg.model.device);
    } else if (cfg.run.threads == 0 && local_ranks > 1) {
      // Ranks on one machine share its cores.
      const int64_t cores = std::max<unsigned>(1, std::thread::hardware_concurrency());
      configure_threads(static_cast<int>(std::max<int64_t>(1, cores / local_ranks)), cfg.model.dtype, cfg.model.device);
    } else if (cfg.run.threads == 0) {
      configure_threads(a, cfg.model.dtype, cfg.model.device);
    } else {
      configure_threads(static_cast<int>(cfg.run.threads), cfg.model.dtype, cfg.model.device);
    }
    TrainRunOptions ro;
    ro.resume = a.flag("resume");
    const bool writer = !reducer || reducer->writes();
    ro.quiet = a.flag("quiet") || a.flag("json") || !writer;
    ro.read_env = read_process_env;
    ro.reducer = reducer.get();
    TrainRunSummary s = run_training(cfg, ro);
    if (a.flag("json") && writer) std::cout << s.to_json().dump() << "\n";
    return 0;
  };
  return c;
}

}  // namespace rlf::cli

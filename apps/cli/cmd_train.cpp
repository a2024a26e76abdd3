// rlf train: a whole RL run from a TOML config (see train/train_run.h and train/train_config.cpp).
#include <cstdlib>
#include <optional>
#include <iostream>

#include "apps/cli/commands.h"
#include "apps/cli/runtime.h"
#include "train/train_run.h"

namespace rlf::cli {

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
  };
  c.run = [](const Args& a) {
    TrainConfig cfg = load_train_config(a.positional().at(0), a.list("set"));
    if (a.given("threads") || cfg.run.threads == 0) configure_threads(a, cfg.model.dtype, cfg.model.device);
    else configure_threads(static_cast<int>(cfg.run.threads), cfg.model.dtype, cfg.model.device);
    TrainRunOptions ro;
    ro.resume = a.flag("resume");
    ro.quiet = a.flag("quiet") || a.flag("json");
    ro.read_env = read_process_env;
    TrainRunSummary s = run_training(cfg, ro);
    if (a.flag("json")) std::cout << s.to_json().dump() << "\n";
    return 0;
  };
  return c;
}

}  // namespace rlf::cli

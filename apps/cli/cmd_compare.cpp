// rlf compare: several RL configs on the same task, seeds and rollout-token
// budget; a table (and one JSON object with --json) of held-out pass@1 per
// config, mean and standard deviation over seeds (train/compare.h).
#include <cstdlib>
#include <iostream>
#include <optional>

#include "apps/cli/commands.h"
#include "apps/cli/runtime.h"
#include "train/compare.h"

namespace rlf::cli {

CommandSpec make_compare_command() {
  CommandSpec c;
  c.name = "compare";
  c.summary = "run several RL configs over the same seeds and token budget; pass@1 mean and std per config";
  c.usage = "CONFIG.toml...";
  c.n_positional_min = 1;
  c.n_positional_max = 64;
  OptionSpec seeds{"seeds", OptKind::Int, "3", "runs per config, with run.seed = 0..N-1", "N"};
  seeds.min = 1;
  seeds.max = 1000;
  c.options = {
      seeds,
      {"set", OptKind::List, "", "override a key of every config, e.g. --set run.rollout_token_budget=500000", "KEY=VALUE"},
      {"out", OptKind::String, "runs/compare", "run directories go to OUT/<config stem>/seed-<s>", "DIR"},
      {"json", OptKind::Flag, "false", "print one JSON object (per config: mean and std of pass@1, tokens, runs)", ""},
  };
  c.run = [](const Args& a) {
    configure_threads(a, "fp32", "cpu");
    CompareOptions o;
    o.seeds = a.integer("seeds");
    o.overrides = a.list("set");
    o.out_dir = a.str("out");
    o.quiet = a.flag("json");
    o.read_env = read_process_env;
    std::vector<std::filesystem::path> configs(a.positional().begin(), a.positional().end());
    CompareResult r = compare_configs(configs, o);
    if (a.flag("json")) std::cout << r.to_json().dump() << "\n";
    else std::cout << "\n" << r.table();
    return 0;
  };
  return c;
}

}  // namespace rlf::cli

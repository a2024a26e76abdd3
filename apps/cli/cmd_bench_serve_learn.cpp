// `rlf bench serve-learn`: written feedback against rewards alone, through
// `rlf serve --learn`'s HTTP API (bench/serve_learn_bench.h).
#include <algorithm>
#include <iomanip>
#include <iostream>

#include "apps/cli/cli.h"
#include "apps/cli/runtime.h"
#include "bench/serve_learn_bench.h"
#include "util/error.h"

namespace rlf::cli {

namespace {

std::vector<std::string> comma_list(const std::string& text) {
  std::vector<std::string> out;
  size_t at = 0;
  while (at <= text.size()) {
    const size_t end = std::min(text.find(',', at), text.size());
    if (end > at) out.push_back(text.substr(at, end - at));
    at = end + 1;
  }
  return out;
}

}  // namespace

CommandSpec make_bench_serve_learn_command() {
  CommandSpec cmd;
  cmd.name = "bench serve-learn";
  cmd.summary = "does a served model learn more from written feedback than from rewards alone? (two-digit addition)";
  cmd.usage = "[LEARN_CONFIG]";
  cmd.n_positional_max = 1;
  cmd.options = {
      {"model", OptKind::String, "", "a model that works sums column by column (e.g. the columns example's warm start)", "DIR"},
      {"conditions", OptKind::String, "words,reward", "words (critique + reward), reward (reward only), comma-separated", "LIST"},
      {"rounds", OptKind::Int, "16", "feedback rounds: one update each", "N", 1, 1e6},
      {"round", OptKind::Int, "16", "prompts per round (= learn.batch)", "N", 1, 1e6},
      {"eval", OptKind::Int, "200", "held-out problems for pass@1 before and after", "N", 1, 1e6},
      {"max-tokens", OptKind::Int, "32", "completion length limit", "N", 1, 1e6},
      {"seed", OptKind::Int, "0", "the first seed: the problems and the sampling seeds", "N", 0, 9.2e18},
      {"seeds", OptKind::Int, "1", "seeds run (seed, seed + 1, ...): mean ± standard error over them", "N", 1, 1000},
      {"work-dir", OptKind::String, "runs/bench-serve-learn", "each condition's learn dir goes under it (replaced)", "DIR"},
      {"json", OptKind::Flag, "false", "print one JSON object", ""},
  };
  cmd.run = [](const Args& args) {
    configure_threads(args, "fp32", args.str("device"));
    ServeLearnBenchOptions o;
    o.model = args.str("model");
    if (!args.positional().empty()) o.learn = learn_options_from_file(args.positional()[0]);
    o.conditions = comma_list(args.str("conditions"));
    o.rounds = args.integer("rounds");
    o.round = args.integer("round");
    o.eval = args.integer("eval");
    o.max_tokens = args.integer("max-tokens");
    o.seed = static_cast<uint64_t>(args.integer("seed"));
    o.seeds = args.integer("seeds");
    o.work_dir = args.str("work-dir");
    const Json r = run_serve_learn_bench(o);
    if (args.flag("json")) {
      std::cout << json_line(r) << "\n";
      return 0;
    }
    for (const Json& run : r.at("runs"))
      std::cout << std::fixed << std::setprecision(3) << "seed " << run.at("seed") << " " << run.at("condition").get<std::string>()
                << ": held-out pass@1 " << run.at("pass1_before").get<double>() << " -> " << run.at("pass1_after").get<double>()
                << " after " << run.at("updates") << " updates (" << run.at("feedback_with_words")
                << " feedback with words; update " << run.at("update_s_max").get<double>() << " s at most)\n";
    for (const auto& [name, c] : r.at("conditions").items())
      std::cout << name << ": gain " << c.at("gain_mean").get<double>() << " ± " << c.at("gain_se").get<double>() << "\n";
    if (r.contains("words_vs_reward"))
      std::cout << "words - reward: " << r["words_vs_reward"].at("mean").get<double>() << " ± "
                << r["words_vs_reward"].at("se").get<double>() << " (ahead on " << r["words_vs_reward"].at("ahead") << " of "
                << r["words_vs_reward"].at("n") << " seeds)\n";
    return 0;
  };
  return cmd;
}

}  // namespace rlf::cli

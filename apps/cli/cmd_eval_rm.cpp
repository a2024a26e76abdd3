// `rlf eval rm`: a reward model on preference pairs — pairwise accuracy
// (RewardBench-style), mean margin, Bradley-Terry loss, calibration (ECE)
// and the scores' spread (rm/reward_model.h measure_reward_model).
#include <cstdio>
#include <iostream>

#include "apps/cli/commands.h"
#include "apps/cli/runtime.h"
#include "data/preference_dataset.h"
#include "rm/reward_model.h"
#include "rollout/policy.h"
#include "util/error.h"

namespace rlf::cli {

namespace {

int run_eval_rm(const Args& a) {
  check(a.given("model"), "rlf eval rm: --model DIR is required (a reward model directory)");
  configure_threads(a, a.str("dtype"), a.str("device"));
  PreferenceDatasetOptions o;
  o.path = a.str("data");
  o.preset = a.str("preset");
  o.seed = static_cast<uint64_t>(a.integer("seed"));
  o.max_records = a.integer("max-pairs");
  o.shuffle = a.integer("max-pairs") > 0;  // a sample of the file, not its first records
  if (o.preset == "arithmetic") o.arithmetic.n_problems = a.integer("max-pairs") > 0 ? a.integer("max-pairs") : 200;
  check(o.preset == "arithmetic" || !o.path.empty(), "rlf eval rm: --data FILE is required (or --preset arithmetic)");
  LoadOptions lo;
  lo.dtype = a.str("dtype");
  lo.device = a.str("device");
  Policy rm = load_policy(a.str("model"), a.str("tokenizer"), lo);
  check(rm.model()->config().is_classifier(), a.str("model"), ": the model is a ", rm.model()->config().architecture,
        ", not a reward model (a *ForSequenceClassification directory, e.g. what `rlf train` with trainer.kind = \"rm\" "
        "writes)");
  rm.model()->eval();
  PreferenceDataset data = PreferenceDataset::load(o);
  std::vector<PreferenceExample> all = data.train(), pairs;
  all.insert(all.end(), data.eval().begin(), data.eval().end());
  // Pairs longer than the model's context cannot be scored: skipped and counted.
  const bool special = !a.flag("no-special-tokens");
  const auto limit = static_cast<size_t>(rm.model()->config().max_position_embeddings);
  int64_t too_long = 0;
  for (const PreferenceExample& p : all) {
    const bool fits = reward_model_tokens(*rm.tokenizer, p.prompt, p.chosen, special).size() <= limit &&
                      reward_model_tokens(*rm.tokenizer, p.prompt, p.rejected, special).size() <= limit;
    if (fits) pairs.push_back(p);
    else ++too_long;
  }
  check(!pairs.empty(), "rlf eval rm: no pair fits the model's context of ", limit, " tokens (", too_long, " too long)");
  const RewardModelPairMetrics m = measure_reward_model(*rm.model(), *rm.tokenizer, pairs, special,
                                                        a.integer("micro-batch"), a.integer("label"));
  Json j = m.to_json();
  j["model"] = a.str("model");
  j["data"] = o.path.empty() ? o.preset : o.path;
  j["skipped_records"] = static_cast<int64_t>(data.n_skipped());
  j["too_long"] = too_long;
  if (a.flag("json")) {
    std::cout << j.dump() << "\n";
  } else {
    std::printf("%s on %lld pairs (%s; %lld longer than the context skipped): accuracy %.4f, margin %.4f, "
                "Bradley-Terry loss %.4f, ECE %.4f, scores %.3f +- %.3f\n",
                a.str("model").c_str(), static_cast<long long>(m.n_pairs), j["data"].get<std::string>().c_str(),
                static_cast<long long>(too_long), m.accuracy, m.margin, m.loss, m.ece, m.score_mean, m.score_std);
  }
  return 0;
}

}  // namespace

CommandSpec make_eval_rm_command() {
  CommandSpec c;
  c.name = "eval rm";
  c.summary = "score preference pairs with a reward model: pairwise accuracy, margin, loss, calibration";
  c.options = {
      {"model", OptKind::String, "", "reward model directory (*ForSequenceClassification)", "DIR"},
      {"tokenizer", OptKind::String, "", "tokenizer (default: the model's own)", "PATH"},
      {"data", OptKind::String, "", "preference pairs: JSONL or JSONL.gz (prompt/chosen/rejected, or HH-RLHF records)",
       "FILE"},
      {"preset", OptKind::String, "generic", "generic | hh-rlhf | arithmetic (generated pairs)", "NAME"},
      {"max-pairs", OptKind::Int, "0", "a seeded sample of at most N pairs (0 = all)", "N", 0, 1e9},
      {"seed", OptKind::Int, "0", "seeds the sample (and the arithmetic pairs)", "N", 0, 1e18},
      {"label", OptKind::Int, "0", "the head output that is the reward", "K", 0, 1e6},
      {"micro-batch", OptKind::Int, "32", "sequences per forward", "N", 1, 1e6},
      {"no-special-tokens", OptKind::Flag, "false", "tokenize prompts without the tokenizer's BOS", ""},
      {"dtype", OptKind::String, "fp32", "fp32 | bf16 | fp16", "DTYPE"},
      {"json", OptKind::Flag, "false", "print one JSON object (accuracy, margin, loss, ece, score_mean, score_std, pairs)",
       ""},
  };
  c.run = run_eval_rm;
  return c;
}

}  // namespace rlf::cli

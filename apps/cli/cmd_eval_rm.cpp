// `rlf eval rm`: a reward model on preference pairs — pairwise accuracy
// (RewardBench-style), mean margin, Bradley-Terry loss, calibration (ECE)
// and the scores' spread (rm/reward_model.h measure_reward_model); with
// rated pairs, each output's Pearson and Spearman correlation with the
// ratings of its attribute; with --process, a process reward model on
// step-labelled solutions (rm/process_reward.h measure_process_reward).
#include <cstdio>
#include <iostream>

#include "apps/cli/commands.h"
#include "apps/cli/runtime.h"
#include "data/preference_dataset.h"
#include "data/step_dataset.h"
#include "rm/process_reward.h"
#include "rm/reward_model.h"
#include "rollout/policy.h"
#include "util/error.h"

namespace rlf::cli {

namespace {

// --process: a process reward model on step-labelled solutions.
int run_eval_prm(const Args& a, Policy& prm) {
  StepDatasetOptions o;
  o.path = a.str("data");
  o.preset = a.str("preset");
  check(o.preset == "generic" || o.preset == "arithmetic", "rlf eval rm --process: --preset must be generic or "
        "arithmetic (got '", o.preset, "')");
  check(o.preset == "arithmetic" || !o.path.empty(), "rlf eval rm --process: --data FILE is required (or --preset "
        "arithmetic)");
  o.delimiter = a.str("delimiter");
  o.seed = static_cast<uint64_t>(a.integer("seed"));
  o.max_records = a.integer("max-pairs");
  o.shuffle = a.integer("max-pairs") > 0;
  if (o.preset == "arithmetic") {
    o.arithmetic.n_problems = a.integer("max-pairs") > 0 ? a.integer("max-pairs") : 200;
    o.arithmetic.min_digits = o.arithmetic.max_digits = 1;
    o.n_terms = 4;
  }
  StepDataset data = StepDataset::load(o);
  std::vector<StepExample> all = data.train();
  all.insert(all.end(), data.eval().begin(), data.eval().end());
  const auto m = measure_process_reward(*prm.model(), *prm.tokenizer, all, o.delimiter, !a.flag("no-special-tokens"),
                                        a.integer("micro-batch"));
  Json j = m.to_json();
  j["model"] = a.str("model");
  j["data"] = o.path.empty() ? o.preset : o.path;
  j["skipped_records"] = static_cast<int64_t>(data.n_skipped());
  if (a.flag("json")) {
    std::cout << j.dump() << "\n";
  } else {
    std::printf("%s on %lld solutions (%lld steps, %s): step accuracy %.4f (labelled right: %.4f), BCE %.4f, "
                "solution accuracy %.4f, first wrong step found %.4f\n",
                a.str("model").c_str(), static_cast<long long>(m.n_solutions), static_cast<long long>(m.n_steps),
                j["data"].get<std::string>().c_str(), m.step_accuracy, m.label_mean, m.bce, m.solution_accuracy,
                m.first_error);
  }
  return 0;
}

int run_eval_rm(const Args& a) {
  check(a.given("model"), "rlf eval rm: --model DIR is required (a reward model directory)");
  const std::string dtype = command_dtype(a, DtypeUse::Batched);
  configure_threads(a, dtype, a.str("device"));
  if (a.flag("process")) {
    LoadOptions lo;
    lo.dtype = dtype;
    lo.device = a.str("device");
    Policy prm = load_policy(a.str("model"), a.str("tokenizer"), lo);
    check(prm.model()->config().is_classifier(), a.str("model"), ": the model is a ",
          prm.model()->config().architecture, ", not a process reward model (a *ForSequenceClassification directory)");
    prm.model()->eval();
    return run_eval_prm(a, prm);
  }
  PreferenceDatasetOptions o;
  o.path = a.str("data");
  o.preset = a.str("preset");
  o.seed = static_cast<uint64_t>(a.integer("seed"));
  o.max_records = a.integer("max-pairs");
  o.shuffle = a.integer("max-pairs") > 0;  // a sample of the file, not its first records
  o.rated = a.flag("rated");
  if (o.preset == "arithmetic") o.arithmetic.n_problems = a.integer("max-pairs") > 0 ? a.integer("max-pairs") : 200;
  check(o.preset == "arithmetic" || !o.path.empty(), "rlf eval rm: --data FILE is required (or --preset arithmetic)");
  LoadOptions lo;
  lo.dtype = dtype;
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
  // A model with a gating layer (ArmoRM) is read through it unless --label names one output.
  RewardReadout readout;
  readout.label = a.integer("label");
  if (!a.given("label"))
    if (auto g = RewardGating::load(a.str("model"))) readout.gating = std::make_shared<const RewardGating>(std::move(*g));
  readout.check_fits(rm.model()->config().num_labels, "rlf eval rm --model " + a.str("model"));
  const RewardModelPairMetrics m =
      measure_reward_model(*rm.model(), *rm.tokenizer, pairs, special, a.integer("micro-batch"), readout);
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
    std::printf("reward: %s\n", m.readout.c_str());
    for (const auto& [name, v] : m.attributes)
      std::printf("  %-16s rated %lld: Pearson %.4f, Spearman %.4f, pairwise accuracy alone %.4f\n", name.c_str(),
                  static_cast<long long>(v.rated), v.pearson, v.spearman, v.pair_accuracy);
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
      {"label", OptKind::Int, "0", "the head output that is the reward (default: the model's gating layer when it "
       "has one, else 0)", "K", 0, 1e6},
      {"micro-batch", OptKind::Int, "32", "sequences per forward", "N", 1, 1e6},
      {"rated", OptKind::Flag, "false", "--preset arithmetic: style-asking prompts with per-attribute ratings "
       "(correct, worked, short), as reward_model.attributes trains on", ""},
      {"process", OptKind::Flag, "false", "a process reward model on step-labelled solutions (prompt/steps/labels "
       "records, or --preset arithmetic: chained sums of four one-digit numbers): step accuracy, BCE, solution and "
       "first-error accuracy", ""},
      {"delimiter", OptKind::String, "\n", "--process: the text between steps, as the PRM was trained", "TEXT"},
      {"no-special-tokens", OptKind::Flag, "false", "tokenize prompts without the tokenizer's BOS", ""},
      {"dtype", OptKind::String, "auto", "auto (bf16 where native: GPU, AMX, AVX512_BF16; else fp32), fp32, bf16 or fp16", "DTYPE"},
      {"json", OptKind::Flag, "false", "print one JSON object (accuracy, margin, loss, ece, score_mean, score_std, pairs)",
       ""},
  };
  c.run = run_eval_rm;
  return c;
}

}  // namespace rlf::cli

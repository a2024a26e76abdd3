// `rlf bench serve-learn`: does written feedback teach a served model more
// than the same number of updates with rewards alone? (docs/serve.md)
//
// For each condition the model is loaded fresh and served by `rlf serve
// --learn`'s server and learner in this process, and a client talks to it
// over HTTP only, like a user would: rounds of `round` two-digit addition
// prompts (one /v1/completions request, temperature 1, seeded), then one
// POST /v1/feedback per choice with the verifier's reward (1 right, 0 wrong:
// the "#### n" answer against a + b) and, in the "words" condition, the
// columns critic's sentence on each wrong answer (feedback/columns_critic.h:
// "The tens column drops the carry: ..."); the client waits for the update
// (learn.batch = round) before the next round. Both conditions see the same
// prompts and seeds and make the same number of updates; "reward" sends no
// words. Held-out pass@1 (greedy, through the same server) is measured
// before and after.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "train/serve_learner.h"
#include "util/json_util.h"

namespace rlf {

struct ServeLearnBenchOptions {
  std::filesystem::path model;        // a model that writes column-by-column sums (e.g. the columns warm start)
  LearnOptions learn;                 // the learner's options (learn.batch is set to `round`)
  std::vector<std::string> conditions = {"words", "reward"};  // "words": critique + reward; "reward": reward only
  int64_t rounds = 16;                // feedback rounds (= updates per condition)
  int64_t round = 16;                 // prompts per round
  int64_t eval = 200;                 // held-out problems (never prompted in a round)
  int64_t max_tokens = 32;            // completion length limit
  uint64_t seed = 0;                  // the first seed (the problems and the sampling seeds)
  int64_t seeds = 1;                  // seeds seed, seed + 1, ...: each condition runs once per seed
  std::filesystem::path work_dir;     // each condition's learn dir goes under it (created)

  // Throws rlf::Error naming the option.
  void validate() const;
};

// Runs every condition once per seed; returns {"runs": [{seed, condition, pass1_before, pass1_after, updates,
// feedback_with_words, train_accuracy, update_s_max, save_s_max, request_s_median, ...}], "conditions": {name:
// {gain_mean, gain_se, pass1_after_mean, pass1_after_se}}, "words_vs_reward": {mean, se, ahead, n} (the paired
// difference of pass1_after seed by seed), "options": {...}}.
Json run_serve_learn_bench(const ServeLearnBenchOptions& options);

}  // namespace rlf

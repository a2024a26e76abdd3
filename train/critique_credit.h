// Critique credit (span_credit.enabled; docs/feedback.md): critique-to-token
// credit as a stage of the RL step. After credit assignment, the step's
// rollout episodes (the failed ones, or all) go to the run's critic with
// their completion decoded as the critic reads it; the spans its critiques
// mark (Critique::spans, or the quotes of a model's critique:
// feedback/critique_spans.h) become per-token scores on exactly the tokens
// that wrote them, and algo::add_span_credit gives those tokens
// coef * score on top of their advantage (algorithms/span_credit.h).
//
//   [span_credit]
//   enabled = true
//   coef = 0.5              # advantage units per marked token (scores -1 / +1)
//   episodes = "failed"     # failed | all: which episodes are critiqued
//   max_critiques = 0       # per step at most (0 = all)
//
// A critique that fails (Critique::ok false) leaves its episode a
// scalar-reward sample and is counted; so is a quote not found in the
// response. Metrics: span_credit/critiques, critic_failures, with_spans (the
// share of critiques that marked a span), unmatched, flagged_tokens (mean per
// critiqued episode) and flagged_share (of their policy tokens).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "env/scored_group.h"
#include "feedback/critic.h"
#include "tokenizer/tokenizer.h"
#include "train/reducer.h"
#include "util/json_util.h"

namespace rlf {

struct CritiqueCreditOptions {
  bool enabled = false;       // [span_credit] enabled
  double coef = 0.5;          // span_credit.coef
  std::string episodes = "failed";  // span_credit.episodes: "failed" | "all"
  int64_t max_critiques = 0;  // span_credit.max_critiques (0 = all)

  // Throws rlf::Error naming the span_credit.* key.
  void validate() const;
};

class CritiqueCredit {
 public:
  CritiqueCredit(Critic& critic, const Tokenizer& tokenizer, CritiqueCreditOptions options);

  // Critiques the rollout episodes of `groups` (after credit assignment:
  // Episode::correct and advantage set) and adds the span credit to their
  // advantages; returns the span_credit/* metrics, summed over the ranks.
  Json apply(std::vector<ScoredGroup>& groups, Reducer& reducer);

 private:
  Critic& critic_;
  const Tokenizer& tokenizer_;
  CritiqueCreditOptions options_;
};

}  // namespace rlf

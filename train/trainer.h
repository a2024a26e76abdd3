// Trainer: the gradient half of every kind of run, one loop for all of them.
//
// update(episodes) takes a step's episodes (advantages, reference log-probs
// already attached where the terms need them) and runs
//   epochs x mini_batches optimiser steps; a mini-batch is a set of whole
//   groups (Episode::group), in a per-step seeded order;
// and for each optimiser step:
//   1. split the mini-batch into micro-batches (sorted by length);
//   2. count every loss term's weights over ALL micro-batches (the term's
//      normaliser), summed across ranks by the Reducer;
//   3. per micro-batch: one forward -> log-probs (and entropy when a term
//      trains on it or it is logged) -> each term's per-token loss ->
//      aggregated with its own normaliser -> summed -> backward;
//   4. gradients summed across ranks (Reducer) -> clip -> AdamW step;
//      a NaN/Inf loss or gradient skips the step (nothing changes, counted).
// The loss terms (train/loss_terms.h) decide what is learned: GRPO is the
// policy term (+ kl, entropy), SFT the ce term alone.
//
// Ownership: the trainer borrows the policy's model (the rollout engine samples
// from the same parameters) and owns its optimizer, the only writer of the
// weights during a run.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <memory>
#include <vector>

#include "env/episode.h"
#include "train/loss_terms.h"
#include "train/lr_schedule.h"
#include "train/optimizer.h"
#include "train/reducer.h"
#include "util/json_util.h"

namespace rlf {

struct TrainerOptions {
  int64_t epochs = 1;             // optimisation passes over each step's episodes
  int64_t mini_batches = 1;       // optimiser steps per pass (the episodes split by groups)
  int64_t micro_batch_size = 8;   // sequences per forward/backward (gradient accumulation)
  int64_t micro_batch_tokens = 0; // > 0: a micro-batch holds up to this many positions instead (any number of
                                  // sequences; train/micro_batch.h split_micro_batches)
  bool balance_ranks = true;      // across ranks: each mini-batch's groups split by tokens (train/rank_balance.h)
  uint64_t seed = 0;              // seeds the mini-batch order
  bool log_entropy = true;        // compute the policy's entropy for metrics even when no term trains on it
  algo::KlEstimator kl_metric_estimator = algo::KlEstimator::K3;  // estimator of the kl/ref metric
  bool log_rollout_agreement = true;  // policy/logprob_diff_max (false for SFT: its targets were not sampled)
  OptimizerOptions optimizer;
  LrScheduleOptions lr = [] {     // over optimiser steps (lr.total_steps = steps x epochs x mini_batches)
    LrScheduleOptions o;
    o.lr = 1e-5;                  // run configs' peak learning rate (optim.lr)
    return o;
  }();

  // Throws rlf::Error naming the key (algorithm.epochs, ...).
  void validate() const;
};

// What accumulate() did for one optimiser step.
struct StepLoss {
  double loss = 0;                   // the back-propagated total (sum over micro-batches and terms)
  bool finite = true;                // false: a NaN/Inf loss (nothing was back-propagated after it)
  std::map<std::string, double> term_loss;    // "loss/<term>": each term's aggregated contribution (coef included)
  std::map<std::string, double> sums;         // TermSums over the step (metric -> weighted sum)
  std::map<std::string, std::string> sum_owner;  // metric -> the term that wrote it (whose weight total normalises it)
  std::map<std::string, double> weight_total; // term name -> its weight total (the normaliser of its sums)
  std::map<std::string, double> sequence_total;  // term name -> its sequence count, for terms whose sums are
                                                 // per sequence (LossTerm::sums_per_sequence)
  double logprob_diff_max = 0;       // max |trainer log-prob - stored old log-prob| on weighted tokens
  double kl_ref_sum = 0;             // sum of k(logp, ref) over weighted tokens (0 without ref_logp)
  double entropy_sum = 0;            // sum of the entropy over weighted tokens (when computed)
  double n_tokens = 0;               // weighted tokens (sum of loss weights)
};

class Trainer {
 public:
  // `terms` must not be empty; a term that needs_reference() needs episodes with ref_logprob.
  Trainer(CausalLM model, std::vector<std::unique_ptr<LossTerm>> terms, TrainerOptions options, Reducer& reducer);

  // Runs the optimiser steps for one trainer step (`step_index` 0-based seeds
  // the mini-batch order) and returns their metrics (loss, per-term losses,
  // policy stats, grad norm, lr, steps applied/skipped).
  Json update(const std::vector<Episode>& episodes, int64_t step_index);

  // Steps 1-3 of one optimiser step: gradients of the loss over `episodes`
  // accumulate in the parameters (the caller zeroes them and steps).
  StepLoss accumulate(const std::vector<const Episode*>& episodes);

  bool needs_reference() const;
  // Whether the update's log-probs run over the episodes' kept sets where they
  // carry them (CausalLM::token_logprobs with keep_ids: no term trains on the
  // entropy, none reads a teacher's top-k).
  bool logprobs_over_kept_sets() const;
  // Re-plans the learning-rate schedule over `total_steps` optimiser steps
  // (a resume keeps the horizon its run started with).
  void set_lr_horizon(int64_t total_steps);
  int64_t lr_horizon() const { return schedule_.options().total_steps; }
  Optimizer& optimizer() { return *optimizer_; }
  // Called after every optimiser step that changed the weights (applied, not
  // skipped), inside update(): distill.teacher = "ema" averages the weights there.
  void set_after_step(std::function<void()> after_step) { after_step_ = std::move(after_step); }
  const TrainerOptions& options() const { return options_; }
  const std::vector<std::unique_ptr<LossTerm>>& terms() const { return terms_; }

 private:
  // Mini-batch `mb` of the slot permutation `order`: its groups' episodes
  // that this rank trains (with `balance`, its share by tokens; otherwise
  // the groups it holds).
  std::vector<const Episode*> mini_batch_episodes(const std::map<int64_t, std::vector<const Episode*>>& groups,
                                                  const std::vector<int64_t>& order, int64_t mb, bool balance) const;

  CausalLM model_;
  std::vector<std::unique_ptr<LossTerm>> terms_;
  TrainerOptions options_;
  Reducer& reducer_;
  std::unique_ptr<Optimizer> optimizer_;
  LrSchedule schedule_;
  std::function<void()> after_step_;  // set_after_step; may be empty
};

}  // namespace rlf

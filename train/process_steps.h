// A process-reward-model run's episodes (trainer.kind = "rm" with
// [process.data], train/run_kind_process.h), one per step-labelled solution: the prompt
// (weight 0), the solution and EOS (weight 1), with the step labels at the
// steps' last tokens — Episode::step_label[e + 1] =
// label for a step ending at token e, the position whose hidden state reads
// the solution up to and including token e (the trainer's alignment of
// per-token targets, train/micro_batch.h) — and NaN elsewhere. The prm loss
// term (train/loss_terms.h) trains the PRM's score there.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "eval/eval_options.h"
#include "rewards/reward_set.h"
#include "util/json_util.h"
#include "data/step_dataset.h"
#include "env/episode.h"
#include "rollout/policy.h"

namespace rlf {

// One solution's episode; throws rlf::Error naming example.where when its
// tokens do not give one end per step (rm/process_reward.h process_input).
Episode process_episode(const Policy& policy, const StepExample& example, const std::string& delimiter,
                        bool add_special_tokens);

// Math-Shepherd's Monte-Carlo step labels (Wang et al. 2024): the label of
// step k < K is the share of `sampling.n_samples` rollouts of the policy,
// continuing from the prompt and steps 1..k (joined by the delimiter, the
// delimiter after step k), that the rewards' accuracy component judges
// correct against the example's reference; the last step's label is
// whether the solution itself is correct. Every continuation of every
// example is generated in one batched evaluate() call (eval/evaluator.h),
// seeded by sampling.seed.
struct MonteCarloReport {
  int64_t solutions = 0, steps = 0, rollouts = 0;
  double label_mean = 0;   // mean estimated label
  double agreement = -1;   // share of steps with (estimate > 0.5) == (given label > 0.5), over examples that had
                           // labels; -1 when none had
  double seconds = 0;
  Json to_json() const;
};
// Replaces every example's labels by the estimates (examples without a
// reference are an error naming them).
MonteCarloReport monte_carlo_step_labels(Policy& policy, std::vector<StepExample>& examples, RewardSet& rewards,
                                         const std::string& delimiter, const EvalOptions& sampling);


}  // namespace rlf

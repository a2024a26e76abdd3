// Critique-guided refinement (Critique-GRPO, Zhang et al. 2025;
// docs/feedback.md), a stage of RL steps between scoring and credit:
//
//   1. critique  every failed episode of a group (the accuracy reward scored
//                <= 0.5, or the total is missing) gets a critique from the
//                critic (feedback/critic.h)
//   2. refine    the policy writes one refinement per critique, from the
//                refinement prompt — by default the task, its response, the
//                critique and the task again, so the refinement is written as
//                an answer to the task — fitted to the context by the rule of
//                feedback/feedback_prompt.h
//   3. score     the same rewards score each refinement as an answer to the
//                original task
//   4. select    "correct": every correct refinement joins its group; "best":
//                the best correct one per group; at most max_per_group
//
// A selected refinement becomes an episode of its group: the original
// prompt's ids followed by the refinement's sampled ids (nothing
// re-tokenized), EpisodeSource::Refinement, off-policy. The policy loss
// trains its tokens with the shaped objective -A * p/(p + gamma), no ratio,
// no clipping (algorithms/policy_shaping.h); its advantage comes from the
// group it joined, so a group where every rollout failed but a refinement
// succeeded is no longer flat ("rescued").
//
// A critique that fails (timeout, error, empty) leaves its episode an
// ordinary scalar-reward sample; every failure, cut and skip is counted in
// the step's metrics (refine/*).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "config/enum_names.h"
#include "feedback/critic.h"
#include "rewards/reward_set.h"
#include "rollout/engine.h"
#include "rollout/policy.h"
#include "train/reducer.h"
#include "env/scored_group.h"
#include "util/json_util.h"

namespace rlf {

// refine.select: Correct = every correct refinement joins its group; Best = the best correct one per group.
enum class RefineSelect { Correct, Best };
const EnumNames<RefineSelect>& refine_select_names();  // "correct", "best"

struct RefineOptions {
  bool enabled = false;                 // [refine] enabled
  std::string prompt = "{prompt}{response}\nFeedback: {critique}\n\n{prompt}";  // the refinement prompt
  RefineSelect select = RefineSelect::Correct;  // refine.select
  int64_t max_per_group = 0;            // refinements joining one group at most (0 = no limit)
  double gamma = 0.1;                   // gamma of the shaped objective p/(p + gamma)
  int64_t max_critiques = 0;            // failed episodes critiqued per step at most (0 = all)

  // Throws rlf::Error naming the refine.* key.
  void validate() const;
};

// What happened in one step's refinement (summed over the reducer for metrics).
struct RefineStats {
  int64_t n_failed = 0;            // failed episodes seen
  int64_t n_critiques = 0;         // critiques asked for
  int64_t n_critic_failures = 0;   // ... that failed (the episode stays a scalar-reward sample)
  int64_t n_refinements = 0;       // refinements generated
  int64_t n_correct = 0;           // ... that the accuracy reward scored correct
  int64_t n_added = 0;             // ... that joined their group
  int64_t n_skipped_context = 0;   // refinement prompts that could not fit the context
  int64_t n_truncated = 0;         // refinement prompts cut to fit
  int64_t n_groups_failed = 0;     // groups with no correct rollout
  int64_t n_groups_rescued = 0;    // ... that got a correct refinement
  int64_t n_rollouts = 0;          // rollout episodes seen
  int64_t n_rollouts_correct = 0;  // ... correct at the first attempt
  int64_t n_generated_tokens = 0;  // tokens generated: refinements, and critiques by a local model
  double critique_chars = 0;       // summed over successful critiques
  double critic_s = 0;             // time in the critic
  double refine_s = 0;             // time generating refinements
  std::vector<std::string> notes;  // the first few critic failures and cuts

  RefineStats& operator+=(const RefineStats& o);
};

class Refiner {
 public:
  // Borrows everything. `accuracy_component` indexes rewards.components().
  Refiner(Policy& policy, RewardSet& rewards, Critic& critic, RefineOptions options, SamplingParams sampling,
          RewardAggregation aggregation, size_t accuracy_component, bool add_special_tokens, int64_t max_batch_rows,
          uint64_t seed);

  // Adds the selected refinements to `groups` (episodes, scores, totals).
  // `step_seed` seeds the step's refinements; tokens record `version`.
  RefineStats refine(std::vector<ScoredGroup>& groups, uint64_t step_seed, int32_t version);

  // "refine/critiques", "refine/success_rate", "refine/generated_tokens", "accuracy/first_attempt",
  // "accuracy/after_feedback", ... (sums over every rank).
  static Json metrics(const RefineStats& stats, Reducer& reducer);

  const RefineOptions& options() const { return options_; }

 private:
  Policy& policy_;
  RewardSet& rewards_;
  Critic& critic_;
  RefineOptions options_;
  SamplingParams sampling_;
  RewardAggregation aggregation_;
  size_t accuracy_component_;
  bool add_special_tokens_;
  uint64_t seed_;
  RolloutEngine engine_;
};

}  // namespace rlf

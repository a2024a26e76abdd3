// RlSteps: where an RL run's episodes come from, one trainer step at a time.
//
//   1. collect    — the next prompts from the cursor (with [curation]'s
//                   difficulty pool or unreliable-reward filter, those the
//                   pool does not skip: data/prompt_pool.h); the episode producer
//                   (env/episode_producer.h) runs group_size episodes of each
//                   through the environment with the shared policy
//   2. score      — the reward set scores each group (the environment's own
//                   rewards are the component "env"); totals per episode
//   2'. pool      — each group's pass rate (and its trained-vs-gold reward
//                   gap) recorded in the prompt pool, the same on every rank
//   2b. refine    — critique-guided refinement (refine.enabled,
//                   train/refinement.h): critiques of failed episodes,
//                   refinements by the policy, correct ones join their group
//   (lessons.enabled, train/lessons.h: before 1 the prompts get the lessons
//   of similar tasks; after 2 failed groups' critiques become lessons)
//   2c. replay    — experience replay (replay.enabled, train/replay_buffer.h):
//                   successes stored, given to groups with none
//   3. filter     — dynamic sampling (DAPO): drop zero-variance groups and
//                   refill, up to a limit of rounds
//   4. reference  — log-probs under the frozen reference (when a loss term or
//                   the KL-in-reward needs them), and under the distillation
//                   teacher (distill.enabled, train/distillation.h)
//   4b. old log-probs — algorithm.recompute_old_logprobs: the trainer's own
//                   log-probs of the rollout tokens become old_logprob, the
//                   rollout's behaviour_logprob (rollout correction)
//   5. credit     — per-token advantages (algorithms/credit.h): episode,
//                   turn or token credit from the totals, the environment's
//                   per-turn rewards, per-token rewards and the KL penalty
//                   (its coefficient fixed or adaptive, algorithms/
//                   kl_controller.h); PPO's gae credit first scores the
//                   episodes with the critic (train/value_model.h) and sets
//                   their value targets; the accuracy reward's verdicts and
//                   each group's correct rate (NFT); SEED-GRPO's scale of each
//                   group's advantages by its semantic entropy (seed_alpha)
//   5b. span credit — span_credit.enabled (train/critique_credit.h): the
//                   critic marks spans of failed episodes, their tokens get
//                   coef x score on top of their advantage
// and the step's metrics (rewards per component, accuracy, lengths, turns,
// environment outcomes, and where the update's signal comes from:
// train/update_shares.h). The trainer (train/trainer.h) then updates the
// policy on the returned episodes. The engine's KV cache is released before
// returning, so the update reclaims its memory.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <vector>

#include "algorithms/kl_controller.h"
#include "data/data_cursor.h"
#include "data/prompt_pool.h"
#include "env/environment.h"
#include "env/episode_producer.h"
#include "rewards/reward_set.h"
#include "rollout/policy.h"
#include "feedback/critic.h"
#include "train/critique_credit.h"
#include "train/distillation.h"
#include "train/feedback_conditioning.h"
#include "train/lessons.h"
#include "train/reducer.h"
#include "train/refinement.h"
#include "train/replay_buffer.h"
#include "env/scored_group.h"
#include "train/train_config.h"
#include "train/value_model.h"
#include "util/json_util.h"

namespace rlf {

// The KL-in-reward shaping of one episode: -beta * k(old_logprob, ref_logprob)
// on its policy tokens (loss weight > 0), 0 elsewhere (algorithms/kl.h
// kl_reward_penalty). Needs ref_logprob.
std::vector<float> kl_reward_tokens(const Episode& episode, algo::KlEstimator estimator, double beta);

class RlSteps {
 public:
  // Borrows everything. `reference` (may be null) is the frozen KL reference,
  // required when options.kl_beta > 0; `critic` (may be null) writes the
  // critiques of refinement and lessons, required when options.refine.enabled
  // or options.lessons.enabled; `value` (may be null) is PPO's critic,
  // required with algorithm.credit = "gae"; `ema` (may be null) is the
  // average of the policy's weights that distill.teacher = "ema" reads,
  // required then (its owner updates it, train/ema_weights.h).
  RlSteps(Policy& policy, const std::vector<PromptExample>& examples, RewardSet& rewards, Environment& env,
          RlStepOptions options, Reducer& reducer, CausalLM reference = nullptr, Critic* critic = nullptr,
          ValueModel* value = nullptr, CausalLM ema = nullptr);

  // Steps 1–5 for trainer step `step` (0-based); tokens record `policy_version`.
  std::vector<Episode> next(int64_t step, int32_t policy_version, Json& metrics);

  DataCursor& cursor() { return cursor_; }
  const std::vector<ScoredGroup>& last_groups() const { return last_groups_; }
  EpisodeProducer& producer() { return producer_; }
  ReplayBuffer* replay() { return replay_.get(); }  // null unless replay.enabled
  LessonStage* lessons() { return lessons_.get(); }  // null unless lessons.enabled
  const LessonStage* lessons() const { return lessons_.get(); }
  const ReplayBuffer* replay() const { return replay_.get(); }
  // The KL-in-reward coefficient (adaptive with algorithm.kl_target > 0; checkpointed).
  algo::KlController& kl_controller() { return kl_; }
  RewardSet& rewards() { return rewards_; }
  const RewardSet& rewards() const { return rewards_; }
  const algo::KlController& kl_controller() const { return kl_; }
  PromptPool* pool() { return pool_.get(); }  // null unless [curation] samples by it (checkpointed)
  const PromptPool* pool() const { return pool_.get(); }

 private:
  std::vector<ScoredGroup> collect_and_score(int64_t step, int32_t version, Json& metrics);
  void add_reference_logprobs(std::vector<ScoredGroup>& groups);
  void recompute_old_logprobs(std::vector<ScoredGroup>& groups, Json& metrics);
  void scale_by_semantic_entropy(std::vector<ScoredGroup>& groups, Json& metrics);
  void assign_credit(std::vector<ScoredGroup>& groups, Json& metrics);
  void reward_metrics(const std::vector<ScoredGroup>& groups, Json& metrics);
  // Records the step's groups (at batch positions `positions` of `batch`) in the pool; returns disagreements.
  int64_t record_in_pool(const std::vector<size_t>& batch, const std::vector<size_t>& positions,
                         const std::vector<ScoredGroup>& groups, int64_t step);

  Policy& policy_;
  const std::vector<PromptExample>& examples_;
  RewardSet& rewards_;
  RlStepOptions options_;
  Reducer& reducer_;
  CausalLM reference_;
  ValueModel* value_;
  algo::KlController kl_;
  EpisodeProducer producer_;
  DataCursor cursor_;
  size_t accuracy_component_ = 0;
  std::unique_ptr<Refiner> refiner_;  // refine.enabled
  std::unique_ptr<CritiqueCredit> span_credit_;  // span_credit.enabled
  std::unique_ptr<DistillTeacher> teacher_;  // distill.enabled
  std::unique_ptr<FeedbackConditioning> fcp_;  // fcp.enabled
  std::unique_ptr<ReplayBuffer> replay_;     // replay.enabled
  std::unique_ptr<LessonStage> lessons_;     // lessons.enabled
  std::unique_ptr<PromptPool> pool_;         // curation.difficulty_pool or curation.reward_disagreement
  size_t gold_component_ = 0;                // algorithm.gold_reward (curation.reward_disagreement > 0)
  std::deque<PromptExample> shown_;          // this step's prompts with lessons (groups point at them)
  std::vector<ScoredGroup> last_groups_;
};

}  // namespace rlf

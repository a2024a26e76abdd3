// ValueModel: PPO's critic, a second model beside the policy (a separate
// critic, as in InstructGPT and TRL's PPOTrainer): a classifier with one
// output (rm/reward_model.h) whose score at each position is the value V of
// the state in which the next token is chosen.
//
// Each RL step (train/rl_steps.h, credit mode "gae"):
//   1. score   — the critic's values of every episode's tokens, before any
//                update (Episode::value); GAE turns them and the per-token
//                rewards into advantages and value targets
//                (Episode::value_target, algorithms/gae.h);
//   2. update  — its own Trainer (its own AdamW and schedule) minimises the
//                value term (train/loss_terms.h ValueTerm, the clipped value
//                loss of algorithms/value_loss.h) over the same epochs and
//                mini-batches as the policy.
// It starts as the policy's backbone when RL starts (after any SFT warm
// start) with a zero score head, or from a classifier directory
// (value.model: a trained reward model, InstructGPT's choice). Checkpoints
// save it and its optimiser (train/checkpoint.h companions, "value/").
//
// With value.shared the critic is a value head on the policy's own trunk
// (CausalLMImpl::add_value_head; the shared-parameter PPO of Schulman et al.
// 2017, TRL's AutoModelForCausalLMWithValueHead): scoring reads the policy's
// hidden states, and the value term (weight value.coef) is one more term of
// the policy's trainer, so its gradient reaches the shared trunk and the
// policy's optimiser and checkpoints carry the head. update() then only
// reports the explained variance.
//
// Ownership: owns the critic's weights and optimiser; borrows the reducer.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "env/episode.h"
#include "model/transformer.h"
#include "train/trainer.h"
#include "util/json_util.h"

namespace rlf {

struct ValueOptions {
  bool enabled = false;   // algorithm.credit = "gae"
  std::string model;      // value.model: "" = the policy as RL starts with a zero head; else a classifier directory
  double lr = 1e-4;       // value.lr: the critic's peak learning rate ([optim]'s schedule and other settings)
  double clip = 0.2;      // value.clip: eps of the clipped value loss (0 = unclipped)
  bool shared = false;    // value.shared: a value head on the policy's trunk instead of a separate critic
  double coef = 0.5;      // value.coef: the value term's weight in the policy's loss (shared only)

  // Throws rlf::Error naming the key.
  void validate() const;
};

class ValueModel {
 public:
  // `critic` must be a classifier (ModelConfig::num_labels >= 1, output 0 is
  // the value); `trainer` gives epochs, mini-batches, micro-batch size, seed,
  // optimiser and schedule (lr replaced by options.lr).
  ValueModel(CausalLM critic, ValueOptions options, TrainerOptions trainer, Reducer& reducer);
  // value.shared: `policy` (with a value head, add_value_head) is the critic;
  // the policy's trainer trains the value term.
  ValueModel(CausalLM policy, ValueOptions options, int64_t micro_batch_size, Reducer& reducer);

  // Sets Episode::value of each episode (no gradient).
  void score(const std::vector<Episode*>& episodes);

  // Trains on the step's episodes (those with value targets) and returns the
  // metrics: loss/value, value/clipfrac, value/mean, value/return_mean,
  // value/error, value/explained_variance (1 - Var(R - V_old) / Var(R) over
  // the policy tokens), value/grad_norm, value/lr.
  Json update(const std::vector<Episode>& episodes, int64_t step_index);

  CausalLM model() const { return critic_; }
  // The critic's own trainer (null with value.shared).
  Trainer* trainer() { return trainer_.get(); }
  const ValueOptions& options() const { return options_; }

 private:
  CausalLM critic_;
  ValueOptions options_;
  Reducer& reducer_;
  int64_t micro_batch_size_;
  std::unique_ptr<Trainer> trainer_;
};

// The critic a run starts from: `base` (the policy as RL starts) as a
// one-output classifier with a zero head, same dtype and device.
CausalLM critic_from_policy(CausalLMImpl& base);

}  // namespace rlf

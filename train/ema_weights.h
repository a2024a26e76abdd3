// EmaWeights: an exponential moving average of a model's weights (the
// distill.teacher = "ema" teacher, train/distillation.h). It owns a second
// CausalLM of the same config, frozen (no gradients), whose parameters follow
//
//   θ_ema ← d·θ_ema + (1 − d)·θ          (d = the decay, in (0, 1))
//
// once per update(θ). It starts as a copy of the model it is built from, so
// after k updates with the weights θ_1..θ_k:
//
//   θ_ema = d^k·θ_0 + (1 − d)·Σ_{i=1..k} d^(k−i)·θ_i
//
// The copy is held in fp32 whatever the model's dtype: in bf16 a step of
// (1 − d)·(θ − θ_ema) is far below the weights' resolution and the average
// would never move. Who calls update, when: the RL run after every optimiser
// step the policy's trainer applied (train/run_kind_rl.cpp); a checkpoint
// saves and restores the weights (CheckpointTargets::models, "ema").
#pragma once

#include "model/transformer.h"

namespace rlf {

class EmaWeights {
 public:
  // θ_ema = θ of `from` now (the same config and device; fp32). `decay`: d above, in (0, 1)
  // (the run checks distill.ema_decay first, DistillOptions::validate).
  EmaWeights(CausalLMImpl& from, double decay);

  // One step of the average towards `from`'s current weights, parameter by parameter
  // by name (every parameter of the EMA model must be in `from` with the same shape;
  // parameters only `from` has, e.g. PPO's value head, are not averaged). No gradient.
  void update(CausalLMImpl& from);

  CausalLM model() const { return model_; }  // the averaged weights (frozen, eval mode)
  double decay() const { return decay_; }
  int64_t n_updates() const { return n_updates_; }  // since construction (not checkpointed)

 private:
  CausalLM model_ = nullptr;
  double decay_;
  int64_t n_updates_ = 0;
};

}  // namespace rlf

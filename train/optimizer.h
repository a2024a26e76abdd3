// AdamW over a model's named parameters, with fp32 master weights for
// low-precision models, global-norm gradient clipping and non-finite skipping.
//
// Update (the same arithmetic as torch.optim.AdamW, one global step count t):
//   w ← w · (1 − lr·wd)                      decoupled weight decay
//   m ← β1·m + (1 − β1)·g                     first moment
//   v ← β2·v + (1 − β2)·g²                    second moment
//   w ← w − lr/(1 − β1^t) · m / (√v / √(1 − β2^t) + eps)
//
// Precision: when a parameter is bf16/fp16 (and master_weights is on) the
// optimiser keeps an fp32 master copy w, fp32 moments, steps in fp32 and writes
// w back into the parameter rounded to the parameter's dtype; forward and
// backward stay in the model's dtype. fp32 parameters are their own master.
// State lives on each parameter's device. On CPU each parameter's update is
// one fused pass over memory (read g, w, m, v; write w, m, v and the rounded
// parameter) with the same per-element fp32 arithmetic; elsewhere (CUDA,
// fp16, no masters) it runs as tensor ops. The gradient norm is accumulated
// in double on CPU.
//
// One optimisation step with gradient accumulation:
//   opt.zero_grad();
//   for (micro-batch) loss_mb.backward();           // grads accumulate
//   StepResult r = opt.step(lr, loss_sum);           // clip, check, update
//   if (!r.applied) log(r.skip_reason);              // nothing changed
// step() skips (no parameter, moment or step-count change) when the loss or any
// gradient is NaN/Inf, and reports why; a skipped state is never half-written.
//
// Who mutates weights: only step() (and load_state(), for a resume). If
// something else overwrites the parameters (e.g. loading weights), call
// sync_master_from_params() before the next step.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace rlf {

struct OptimizerOptions {
  double beta1 = 0.9;               // first-moment decay
  double beta2 = 0.999;             // second-moment decay
  double eps = 1e-8;                // added to √v̂ in the denominator
  double weight_decay = 0.0;        // decoupled (AdamW) decay per unit of lr; 0 = none
  bool decay_norms_and_biases = false;  // false: no decay for biases and 1-D weights (norms)
  bool decay_embeddings = true;     // false: no decay for "embed_tokens" (and a tied lm_head)
  double max_grad_norm = 1.0;       // clip the global L2 norm of all grads to this; 0 = no clipping
  bool master_weights = true;       // fp32 masters for bf16/fp16 parameters (off: step in their dtype)
};

// Checks ranges; errors name the field ("optimizer.beta1 = 1.5: must be in [0, 1)").
void validate(const OptimizerOptions& options);

// What one step() did.
struct StepResult {
  bool applied = false;        // false: skipped, nothing changed
  double grad_norm = 0.0;      // global L2 norm of the gradients BEFORE clipping (NaN/Inf when skipped for that)
  bool clipped = false;        // grads were scaled down to max_grad_norm
  double lr = 0.0;             // learning rate used
  int64_t step = 0;            // optimiser step count after this call (1 after the first applied step)
  std::string skip_reason;     // why it was skipped ("" when applied)
};

// Tensors of one parameter's optimiser state.
struct ParamState {
  std::string name;            // Hugging Face parameter name
  torch::Tensor param;         // the model's parameter (shares storage with the module)
  torch::Tensor master;        // fp32 master copy; undefined when the parameter is its own master
  torch::Tensor exp_avg;       // m, fp32 (or the parameter's dtype when master_weights is off)
  torch::Tensor exp_avg_sq;    // v
  double weight_decay = 0.0;   // effective decay for this parameter (0 for no-decay ones)
};

class Optimizer {
 public:
  // Takes every parameter of `params` that requires grad (in order).
  Optimizer(const std::vector<std::pair<std::string, torch::Tensor>>& params, const OptimizerOptions& options);
  // Convenience: the module's named_parameters().
  Optimizer(torch::nn::Module& module, const OptimizerOptions& options);

  // Clears every gradient (sets them to undefined, like set_to_none=True).
  void zero_grad();

  // Clips, checks and applies one update at learning rate `lr`. `loss` (the
  // step's total loss, if the caller has it) is checked for finiteness too.
  // Parameters without a gradient are left untouched (as torch does).
  StepResult step(double lr, std::optional<double> loss = std::nullopt);

  // Global L2 norm of the current gradients (fp32 accumulation), no change.
  double grad_norm() const;

  // Re-reads masters from the parameters (after someone overwrote them).
  void sync_master_from_params();

  int64_t step_count() const { return step_; }
  int64_t n_skipped() const { return n_skipped_; }   // skipped steps since construction / load
  const OptimizerOptions& options() const { return options_; }
  const std::vector<ParamState>& states() const { return states_; }

  // State for checkpoints: "exp_avg.<name>", "exp_avg_sq.<name>" and, for
  // parameters with a master, "master.<name>" (tensors are the live ones;
  // copy before mutating). The step count travels separately.
  std::map<std::string, torch::Tensor> state_tensors() const;

  // Restores what state_tensors() returned and the step count. Every expected
  // tensor must be present with the right shape and dtype and no other; errors
  // name `source` and the tensor. Masters are written back into the parameters
  // (rounded), so the parameters match the masters afterwards.
  void load_state(const std::map<std::string, torch::Tensor>& tensors, int64_t step, int64_t n_skipped,
                  const std::string& source);

 private:
  OptimizerOptions options_;
  std::vector<ParamState> states_;
  int64_t step_ = 0;
  int64_t n_skipped_ = 0;
};

// True when `name` (with `dim` dimensions) gets no weight decay under `options`.
bool is_no_decay_param(const std::string& name, int64_t dim, const OptimizerOptions& options);

}  // namespace rlf

// What a run's policy update will need in memory, estimated before anything
// is loaded (`rlf train CONFIG --dry-run`), and which levers bring it under a
// limit. One estimate per part, each from model/memory_levers.h's formulas or
// a count of parameters:
//
//   weights         every parameter in the model's dtype (a reference model
//                   or a separate critic adds its own)
//   gradients       the trainable parameters' gradients, in the model's dtype
//   optimizer       AdamW's two fp32 moments, plus fp32 masters for bf16
//   activations     one micro-batch's forward kept for backward (layers
//                   checkpointed: one segment's and every segment's input)
//   log-probs       one micro-batch's logits kept for backward (recompute:
//                   one chunk's)
//   grad_buffers    the classifier's (and a tied embedding's) [V, D] fp32
//                   gradients while backward builds them
//   kv_cache        the rollout's keys and values for max_batch_rows rows
//
//   MemoryPlan p = plan_memory(cfg, check_model_files(cfg.model_path()), 24e9);
//   std::cout << p.table();
//
// The update's peak is weights + gradients + optimizer + activations +
// log-probs + grad_buffers; the rollout's is weights + kv_cache (+ packed weights). An
// estimate to tell a run that will not fit from one that will, not a
// measurement: docs/benchmarks.md compares it with measured peaks.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/config.h"
#include "train/train_config.h"
#include "util/json_util.h"

namespace rlf {

struct MemoryPart {
  std::string name;   // "weights", "gradients", ...
  double mb = 0;      // 1e6 bytes
  std::string basis;  // how it was counted ("494 M parameters x 4 bytes")
};

struct MemoryPlan {
  int64_t seq_len = 0;        // the longest sequence the update sees (prompt + episode budget, within the context)
  int64_t micro_batch = 0;    // sequences per forward/backward (with trainer.micro_batch_tokens: the full-length
                              // sequences the budget holds, its worst case)
  bool logprob_recompute = false;  // what the levers decide at these shapes
  int64_t checkpoint_every = 0;    // 0: no checkpointing
  std::vector<MemoryPart> parts;
  double update_peak_mb = 0;
  double rollout_peak_mb = 0;
  double peak_mb() const { return update_peak_mb > rollout_peak_mb ? update_peak_mb : rollout_peak_mb; }

  std::string table() const;  // one line per part, then the two peaks
  Json to_json() const;
};

// The plan of `cfg` for a model of shape `model`, with the config's levers
// resolved for a machine whose usable memory is `usable_bytes`.
// `prompt_tokens`: the prompt length assumed (the data is not read).
MemoryPlan plan_memory(const TrainConfig& cfg, const ModelConfig& model, int64_t usable_bytes,
                       int64_t prompt_tokens = 256);

// Parameters of a model of this shape (embeddings, every projection, norms;
// the LM head unless tied), and those LoRA of `lora` would train.
int64_t count_parameters(const ModelConfig& c);
int64_t count_lora_parameters(const ModelConfig& c, const LoraOptions& lora);

// Settings that bring the plan's peak under `limit_mb`, cheapest first
// (the levers on, then LoRA, then bf16, then smaller micro-batches): each
// as the --set overrides that make it; empty when it fits already. Stops at
// the first that fits; the last entry is the closest otherwise.
std::vector<std::string> memory_advice(const TrainConfig& cfg, const ModelConfig& model, double limit_mb,
                                       int64_t usable_bytes, int64_t prompt_tokens = 256);

}  // namespace rlf

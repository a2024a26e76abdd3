// What the policy update keeps in memory, and the estimates that decide the
// "auto" settings (and `rlf train --dry-run`'s report): one formula each.
//
//   MemoryLevers m;                        // auto, auto: on where they help
//   m.checkpoint = CheckpointMode::Layers; // always checkpoint every layer
//   policy->set_memory_levers(m);
//
// The levers (model/recompute.h does the recomputing):
// - Vocabulary-chunked log-probs recomputed in backward
//   (CausalLMImpl::token_logprobs): never a [B, T, V] tensor, one more
//   classifier matmul per chunk. Auto turns it on for a call whose rows x
//   vocabulary reach `auto_logits` (2^27 logits, 512 MB in fp32: the Qwen
//   vocabulary at 884 rows; no built-in example reaches it).
// - Activation checkpointing (CausalLMImpl::set_checkpoint_layers): keeps a
//   segment's input only and runs its forward again in backward; the same
//   values and gradients, bit for bit (the same kernels on the same shapes),
//   about a third more compute. Auto checkpoints when the estimated kept
//   activations of one forward reach `auto_activation_bytes`, which a run
//   sets to a quarter of the memory it may use (util/memory_usage.h): on only
//   where memory would otherwise run short, and the numbers do not depend on
//   the machine either way.
// - Padding-free micro-batches (train/micro_batch.h forward_for_heads): the
//   layers and the classifier run over a micro-batch's real tokens only,
//   its sequences concatenated (attention per sequence); the same values to
//   float rounding. Auto turns it on for a micro-batch whose padding is at
//   least an eighth of its [sequences x longest] grid.
// The log-prob decision depends on the shapes only (its chunking changes
// float rounding), so a run computes the same numbers wherever it runs.
#pragma once

#include <cstdint>

#include "config/enum_names.h"
#include "model/config.h"

namespace rlf {

enum class LeverMode { Auto, On, Off };
enum class CheckpointMode { Auto, None, Layers };  // Layers: segments of `checkpoint_every` layers

// The names config keys and `rlf bench train` use: "auto", "on", "off" and
// "auto", "none", "layers" (errors name trainer.logprob_recompute and
// trainer.checkpoint_activations).
const EnumNames<LeverMode>& lever_mode_names();
const EnumNames<CheckpointMode>& checkpoint_mode_names();
// "auto", "on", "off" under trainer.padding_free.
const EnumNames<LeverMode>& padding_free_mode_names();

struct MemoryLevers {
  LeverMode logprob_recompute = LeverMode::Auto;
  int64_t logprob_chunk_rows = 0;                     // rows per chunk; 0 = automatic (about 2^25 logits)
  int64_t auto_logits = int64_t{1} << 27;             // Auto: recompute from this many rows x vocabulary on
  CheckpointMode checkpoint = CheckpointMode::Auto;
  int64_t checkpoint_every = 1;                       // layers per checkpointed segment (Layers, and Auto when on)
  int64_t auto_activation_bytes = 0;                  // Auto: checkpoint from this estimate on (0 = never)
  LeverMode padding_free = LeverMode::Auto;           // Auto: on where padding is >= 1/8 of a micro-batch's grid

  // Throws rlf::Error on a negative count or threshold.
  void validate() const;
};

// Bytes that autograd keeps for one decoder layer's forward over `tokens`
// positions in rows of `seq_len`, with activations of `elem_bytes` each:
// about 6·D + 2·D_q + 3·D_kv elements per position (norm inputs and
// outputs, q/k/v and their rotated copies, the attention output) plus, on
// the module path, 4·I (the MLP's gate, up, activation and product), or
// with the `fused` kernels of the fp32 CPU fast path 2·I (gate and up); and
// attention's H·T probabilities (module path: scores too, 2·H·T) for each of
// the `grid_cells` positions of the [rows x seq_len] grid attention runs on
// (-1 = `tokens`: padded rows; a padding-free forward's grid is larger than
// its tokens). An estimate: docs/models.md compares the plans built on it
// with measured peaks at the Qwen2.5-0.5B shape.
int64_t layer_activation_bytes(const ModelConfig& c, int64_t tokens, int64_t seq_len, int64_t elem_bytes,
                               bool fused, int64_t grid_cells = -1);

// Bytes autograd keeps for the log-probs of `rows` positions: with recompute
// one chunk's logits and their gradient (chunk_rows x V x 4 x 2) plus the
// per-row results; without it the fp32 logits, their log-softmax and the
// gradient of one [rows, V] tensor (x 3).
int64_t logprob_bytes(const ModelConfig& c, int64_t rows, bool recompute, int64_t chunk_rows);

// Whether a micro-batch of `tokens` real tokens on a grid of `cells`
// (sequences x the longest) runs padding-free under `levers`.
bool padding_free_applies(const MemoryLevers& levers, int64_t tokens, int64_t cells);

// `levers` with auto checkpointing's threshold set to a quarter of
// `usable_bytes` (the memory the process may use, util/memory_usage.h) where
// it is 0.
MemoryLevers with_machine_memory(MemoryLevers levers, int64_t usable_bytes);

// The rows per chunk token_logprobs uses with recompute on: `chunk_rows` if
// set, else about 2^25 logits per chunk and at least 64 rows.
int64_t recompute_chunk_rows(const ModelConfig& c, int64_t chunk_rows);

}  // namespace rlf

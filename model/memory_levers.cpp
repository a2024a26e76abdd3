#include "model/memory_levers.h"

#include <algorithm>

#include "util/error.h"

namespace rlf {

const EnumNames<LeverMode>& lever_mode_names() {
  static const EnumNames<LeverMode> names{
      "trainer.logprob_recompute", {{LeverMode::Auto, "auto"}, {LeverMode::On, "on"}, {LeverMode::Off, "off"}}};
  return names;
}

const EnumNames<CheckpointMode>& checkpoint_mode_names() {
  static const EnumNames<CheckpointMode> names{
      "trainer.checkpoint_activations",
      {{CheckpointMode::Auto, "auto"}, {CheckpointMode::None, "none"}, {CheckpointMode::Layers, "layers"}}};
  return names;
}

const EnumNames<LeverMode>& padding_free_mode_names() {
  static const EnumNames<LeverMode> names{
      "trainer.padding_free", {{LeverMode::Auto, "auto"}, {LeverMode::On, "on"}, {LeverMode::Off, "off"}}};
  return names;
}

bool padding_free_applies(const MemoryLevers& levers, int64_t tokens, int64_t cells) {
  switch (levers.padding_free) {
    case LeverMode::On: return true;
    case LeverMode::Off: return false;
    case LeverMode::Auto: break;
  }
  return 8 * (cells - tokens) >= cells;
}

void MemoryLevers::validate() const {
  check(logprob_chunk_rows >= 0, "trainer.logprob_chunk_rows must be >= 0 (0 = automatic), got ", logprob_chunk_rows);
  check(checkpoint_every >= 1, "trainer.checkpoint_activations: layers per segment must be >= 1, got ",
        checkpoint_every);
  check(auto_logits >= 0 && auto_activation_bytes >= 0, "memory levers: negative auto threshold");
}

int64_t layer_activation_bytes(const ModelConfig& c, int64_t tokens, int64_t seq_len, int64_t elem_bytes,
                               bool fused, int64_t grid_cells) {
  const int64_t d = c.hidden_size, hd = c.resolved_head_dim();
  const int64_t q = c.num_attention_heads * hd, kv = c.num_key_value_heads * hd, i = c.intermediate_size;
  const int64_t per_token = 6 * d + 2 * q + 3 * kv + (fused ? 2 * i : 4 * i);
  const int64_t per_cell = (fused ? 1 : 2) * c.num_attention_heads * seq_len;
  return (per_token * tokens + per_cell * (grid_cells < 0 ? tokens : grid_cells)) * elem_bytes;
}

MemoryLevers with_machine_memory(MemoryLevers levers, int64_t usable_bytes) {
  if (levers.auto_activation_bytes == 0) levers.auto_activation_bytes = usable_bytes / 4;
  return levers;
}

int64_t recompute_chunk_rows(const ModelConfig& c, int64_t chunk_rows) {
  if (chunk_rows > 0) return chunk_rows;
  return std::max<int64_t>(64, (int64_t{1} << 25) / std::max<int64_t>(1, c.vocab_size));
}

int64_t logprob_bytes(const ModelConfig& c, int64_t rows, bool recompute, int64_t chunk_rows) {
  const int64_t v = c.vocab_size;
  if (!recompute) return rows * v * 4 * 3;
  return std::min(rows, recompute_chunk_rows(c, chunk_rows)) * v * 4 * 2 + rows * 4 * 4;
}

}  // namespace rlf

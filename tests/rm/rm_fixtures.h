// Shared by the reward-model tests: a tiny Llama configuration.
#pragma once

#include "model/config.h"

namespace rlf::test {

// 2 layers, hidden 64, vocabulary 128, untied: small enough for by-hand gradients.
inline ModelConfig tiny_rm_config() {
  ModelConfig c;
  c.vocab_size = 128, c.hidden_size = 64, c.intermediate_size = 96, c.num_hidden_layers = 2;
  c.num_attention_heads = 4, c.num_key_value_heads = 2, c.max_position_embeddings = 256, c.rms_norm_eps = 1e-6;
  c.tie_word_embeddings = false;
  return c;
}

}  // namespace rlf::test

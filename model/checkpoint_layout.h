// The tensors a checkpoint of one of rlf's families must hold for a ModelConfig, under
// Hugging Face's names (model.embed_tokens.weight, model.layers.{i}.self_attn.
// q_proj.weight, ...). The LibTorch model registers its parameters under these
// same names, so a checkpoint maps onto it without a renaming table. Torch-free.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/config.h"
#include "model/tensor_view.h"

namespace rlf {

struct ExpectedTensor {
  std::string name;            // Hugging Face parameter name
  std::vector<int64_t> shape;  // [out, in] for linear weights, [n] for norms and biases
};

// Every parameter of the model `config` describes, in a fixed order: the
// embedding, then per layer (input_layernorm unless the family norms after
// attention only; q/k/v — or Phi-3's fused qkv_proj — and o projections with
// their biases when attention_bias / o_bias; q_norm and k_norm when the family
// has them; post_attention_layernorm; pre_feedforward_layernorm for Gemma;
// gate/up — or gate_up_proj — and down with biases when mlp_bias;
// post_feedforward_layernorm for Gemma and OLMo 2), then model.norm.weight,
// then lm_head.weight unless tie_word_embeddings (a classifier: score.weight
// instead).
std::vector<ExpectedTensor> expected_tensors(const ModelConfig& config);

// Checks that `tensors` holds every expected tensor with the expected shape and
// a weight dtype (F32, F16, BF16). Throws one rlf::Error naming `source`, the
// tensor, its shape/dtype and the expected one. Extra tensors are an error too
// (except rotary caches "*.rotary_emb.inv_freq", "lm_head.weight" in a tied
// model when it equals the embedding's shape, and a causal LM's PPO value head
// "v_head.weight" [1, hidden]), so a checkpoint for another config never loads
// silently.
void check_tensors(const ModelConfig& config, const TensorMap& tensors, const std::string& source);

}  // namespace rlf

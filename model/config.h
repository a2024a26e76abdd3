// ModelConfig: the shape of a Llama-family decoder (Llama 2/3, Mistral, Qwen2,
// SmolLM, TinyLlama), read from / written to a Hugging Face config.json.
// Field names follow the Hugging Face keys they come from.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "util/json_util.h"

namespace rlf {

// RoPE frequency scaling ("rope_scaling" in config.json). Only "llama3" (and
// none) are supported; anything else is an error naming the type.
struct RopeScaling {
  std::string type;                             // "" (none) or "llama3"
  double factor = 8.0;                          // llama3: overall wavelength scale
  double low_freq_factor = 1.0;                 // llama3
  double high_freq_factor = 4.0;                // llama3
  int64_t original_max_position_embeddings = 8192;  // llama3
};

struct ModelConfig {
  std::string architecture = "LlamaForCausalLM";  // architectures[0]: *ForCausalLM, or *ForSequenceClassification
                                                  // (a reward model: a score head instead of the LM head)
  std::string model_type = "llama";               // "llama", "mistral", "qwen2"
  int64_t vocab_size = 32000;
  int64_t hidden_size = 4096;          // d_model
  int64_t intermediate_size = 11008;   // SwiGLU hidden width
  int64_t num_hidden_layers = 32;
  int64_t num_attention_heads = 32;
  int64_t num_key_value_heads = 32;    // < num_attention_heads: grouped-query attention
  int64_t head_dim = 0;                // 0 = hidden_size / num_attention_heads
  int64_t max_position_embeddings = 2048;
  double rms_norm_eps = 1e-5;
  double rope_theta = 10000.0;
  RopeScaling rope_scaling;
  bool tie_word_embeddings = false;
  bool attention_bias = false;         // q/k/v (and o when `o_bias`) projections carry a bias
  bool o_bias = false;                 // Llama's attention_bias also adds one to o_proj; Qwen2 does not
  bool mlp_bias = false;
  std::string hidden_act = "silu";
  std::string torch_dtype = "float32";  // dtype the checkpoint was saved in
  std::optional<int64_t> bos_token_id;
  std::vector<int64_t> eos_token_ids;   // eos_token_id: one id or a list (Llama 3)
  int64_t num_labels = 0;               // *ForSequenceClassification: outputs of the score head (> 0); else 0
  std::vector<std::string> label_names; // id2label's names in order ([] = "LABEL_<i>"): a multi-objective
                                        // reward model's attributes

  // A sequence classifier (reward model): "score.weight" [num_labels, hidden]
  // instead of an LM head; scores are read at a sequence's last token.
  bool is_classifier() const { return num_labels > 0; }
  // The same backbone as a classifier with `labels` outputs (`labels` > 0) or
  // back as a causal LM (0): the architecture name follows (Llama, Mistral, Qwen2).
  ModelConfig with_labels(int64_t labels) const;
  // Output i's name: label_names[i], else "LABEL_<i>".
  std::string label_name(int64_t i) const;

  int64_t resolved_head_dim() const { return head_dim > 0 ? head_dim : hidden_size / num_attention_heads; }

  // Checks internal consistency (divisibility, positivity, supported values);
  // throws rlf::Error naming the field and the fix.
  void validate(const std::string& source = "model config") const;

  // Parses a Hugging Face config.json object. Unknown architectures and
  // missing required fields are errors naming them (source names the file).
  static ModelConfig from_hf_json(const Json& j, const std::string& source);

  // Writes a config.json object that transformers loads unchanged.
  Json to_hf_json() const;

  // Shapes of the llama2.c "stories" models ("stories260K", "stories15M",
  // "stories42M", "stories110M"), used by benchmarks to build random models.
  static ModelConfig preset(const std::string& name);

  // Exact parameter count (embeddings counted once when tied).
  int64_t n_params() const;
};

}  // namespace rlf

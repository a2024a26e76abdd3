// ModelConfig: the shape of a decoder of one of rlf's families (Llama 2/3,
// Mistral, Qwen 2/2.5/3, Gemma 2/3, Phi-3/Phi-4-mini, SmolLM 2/3, OLMo 2;
// model/architecture.h), read from / written to a Hugging Face config.json.
// Field names follow the Hugging Face keys they come from; per-layer choices
// (sliding window, which RoPE) are resolved here, once, so the forward reads
// them without knowing the family's rules.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "model/architecture.h"
#include "util/json_util.h"

namespace rlf {

// RoPE frequency scaling of one kind of layer ("rope_scaling" in 4.x
// config.json files, "rope_parameters" in 5.x), as transformers' 
// modeling_rope_utils.py computes it (see model/rope.h).
struct RopeScaling {
  std::string type;                   // "" (none), "linear", "dynamic", "yarn", "longrope" or "llama3"
  double factor = 0;                  // linear, dynamic, llama3: required (> 0); yarn, longrope:
                                      //   0 = max_position_embeddings / original_max_position_embeddings
  double low_freq_factor = 1.0;       // llama3
  double high_freq_factor = 4.0;      // llama3
  int64_t original_max_position_embeddings = 0;  // llama3, yarn, longrope: the pre-training context
  std::optional<double> attention_factor;        // yarn, longrope: multiplies cos and sin (default: from factor)
  double beta_fast = 32;              // yarn: ramp bounds, in rotations
  double beta_slow = 1;               // yarn
  std::optional<double> mscale;       // yarn (DeepSeek-style attention factor)
  std::optional<double> mscale_all_dim;  // yarn
  bool truncate = true;               // yarn: ramp bounds rounded to whole dimensions
  std::vector<double> short_factor;   // longrope: divisors per frequency [rotary_dim / 2], short sequences
  std::vector<double> long_factor;    // longrope: the same past original_max_position_embeddings

  bool operator==(const RopeScaling& o) const;
};

// One RoPE table: its base and scaling.
struct RopeSpec {
  double theta = 10000.0;
  RopeScaling scaling;
};

// What one layer's attention does beyond the family's common choices.
struct LayerAttention {
  int64_t window = 0;  // > 0: a query at position p sees keys at positions p - window < s <= p; 0: all s <= p
  int rope = 0;        // RoPE table: 0 the model's, 1 the sliding layers' own (Gemma 3), -1 none (SmolLM3)
};

struct ModelConfig {
  std::string architecture = "LlamaForCausalLM";  // architectures[0]: *ForCausalLM, or *ForSequenceClassification
                                                  // (a reward model: a score head instead of the LM head)
  std::string model_type = "llama";               // "llama", "qwen3", "gemma3_text", ...
  int64_t vocab_size = 32000;
  int64_t hidden_size = 4096;          // d_model
  int64_t intermediate_size = 11008;   // gated MLP hidden width
  int64_t num_hidden_layers = 32;
  int64_t num_attention_heads = 32;
  int64_t num_key_value_heads = 32;    // < num_attention_heads: grouped-query attention
  int64_t head_dim = 0;                // 0 = hidden_size / num_attention_heads
  int64_t max_position_embeddings = 2048;
  double rms_norm_eps = 1e-5;
  double rope_theta = 10000.0;
  RopeScaling rope_scaling;            // of every layer with RoPE (Gemma 3: of the full-attention layers)
  double rope_local_theta = 0;         // Gemma 3: the sliding layers' base (rope_local_base_freq); 0 = none
  RopeScaling rope_local_scaling;      // Gemma 3: the sliding layers' scaling (5.x nested rope_parameters)
  double partial_rotary_factor = 1.0;  // Phi-3/4: RoPE on the first head_dim·f dimensions of each head
  std::vector<std::string> layer_types;  // per layer "full_attention" | "sliding_attention"; [] = all full
  int64_t sliding_window = 0;          // window of the sliding layers (0 = none, whatever layer_types say)
  std::vector<int64_t> no_rope_layers; // SmolLM3: per layer 1 = RoPE, 0 = none; [] = RoPE everywhere
  double query_pre_attn_scalar = 0;    // Gemma: scores × query_pre_attn_scalar^-1/2; 0 = head_dim
  double attn_logit_softcapping = 0;   // Gemma 2: scores = c·tanh(scores / c); 0 = off
  double final_logit_softcapping = 0;  // Gemma 2/3: logits = c·tanh(logits / c); 0 = off
  bool tie_word_embeddings = false;
  bool attention_bias = false;         // q/k/v (and o when `o_bias`) projections carry a bias
  bool o_bias = false;                 // Llama's attention_bias also adds one to o_proj; Qwen2 does not
  bool mlp_bias = false;
  std::string hidden_act = "silu";     // the gated MLP's activation: "silu" or "gelu_pytorch_tanh"
  std::string torch_dtype = "float32";  // dtype the checkpoint was saved in
  std::optional<int64_t> bos_token_id;
  std::optional<int64_t> pad_token_id;  // kept for transformers (Phi-3's class default, 32000, outside a small vocabulary
                                        // would break its embedding); written as null when unset
  std::vector<int64_t> eos_token_ids;   // eos_token_id: one id or a list (Llama 3)
  int64_t num_labels = 0;               // *ForSequenceClassification: outputs of the score head (> 0); else 0
  std::vector<std::string> label_names; // id2label's names in order ([] = "LABEL_<i>"): a multi-objective
                                        // reward model's attributes

  // The family of `architecture` (model/architecture.h); errors when unsupported.
  const Family& family() const;

  // A sequence classifier (reward model): "score.weight" [num_labels, hidden]
  // instead of an LM head; scores are read at a sequence's last token.
  bool is_classifier() const { return num_labels > 0; }
  // The same backbone as a classifier with `labels` outputs (`labels` > 0) or
  // back as a causal LM (0): the architecture name follows the family.
  ModelConfig with_labels(int64_t labels) const;
  // Output i's name: label_names[i], else "LABEL_<i>".
  std::string label_name(int64_t i) const;

  int64_t resolved_head_dim() const { return head_dim > 0 ? head_dim : hidden_size / num_attention_heads; }
  // Dimensions of each head that RoPE rotates: int(head_dim · partial_rotary_factor).
  int64_t rotary_dim() const;
  // The factor attention scores are multiplied by (query_pre_attn_scalar^-1/2, else head_dim^-1/2).
  double attention_scale() const;
  // Layer `layer`'s window and RoPE table.
  LayerAttention layer_attention(int64_t layer) const;
  // RoPE table `which` (LayerAttention::rope: 0, or 1 when rope_local_theta > 0).
  RopeSpec rope(int which) const;
  int n_rope_tables() const { return rope_local_theta > 0 ? 2 : 1; }

  // Checks internal consistency (divisibility, positivity, supported values);
  // throws rlf::Error naming the field and the fix.
  void validate(const std::string& source = "model config") const;

  // Parses a Hugging Face config.json object (transformers 4.x or 5.x
  // layout). Keys the file leaves out take the family's transformers
  // defaults; unknown architectures and missing required fields are errors
  // naming them (source names the file).
  static ModelConfig from_hf_json(const Json& j, const std::string& source);

  // Writes a config.json object that transformers (4.x for the families it
  // has, and 5.x) loads as the same model: the rope keys in both layouts.
  Json to_hf_json() const;

  // Shapes of the llama2.c "stories" models ("stories260K", "stories15M",
  // "stories42M", "stories110M"), used by benchmarks to build random models.
  static ModelConfig preset(const std::string& name);

  // Exact parameter count (embeddings counted once when tied): the sizes of
  // expected_tensors(*this) (model/checkpoint_layout.h).
  int64_t n_params() const;
};

}  // namespace rlf

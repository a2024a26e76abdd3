// The decoder families rlf runs. Each is a configuration of one decoder
// (model/transformer.h, model/cpu_fast_forward.cpp): where the RMSNorms sit
// and how they scale, q/k norms, fused projections, the embedding scale,
// which bias and sliding-window keys of config.json it reads, and
// transformers' class defaults for the keys a config.json may leave out.
// Torch-free: config.json parsing (model/config.h), the checkpoint layout
// (model/checkpoint_layout.h) and the LibTorch modules all read this table.
//
// A new family is one entry in families() (architecture.cpp), checked by the
// transformers oracle (tests/model/test_families_oracle.cpp) — never a copy
// of the forward.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "util/json_util.h"

namespace rlf {

// Where a layer's RMSNorms sit (parameter names are Hugging Face's):
enum class NormPlacement {
  Pre,       // Llama:   h = x + attn(in(x));       y = h + mlp(post_attention(h))
             //          (input_layernorm, post_attention_layernorm)
  Sandwich,  // Gemma:   h = x + post_attention(attn(in(x)));  y = h + post_ff(mlp(pre_ff(h)))
             //          (input_layernorm, post_attention_layernorm, pre_feedforward_layernorm,
             //           post_feedforward_layernorm)
  Post,      // OLMo 2:  h = x + post_attention(attn(x));      y = h + post_ff(mlp(h))
             //          (post_attention_layernorm, post_feedforward_layernorm)
};

// RMSNorm of queries and keys before RoPE (self_attn.q_norm / k_norm):
enum class QkNorm {
  None,
  PerHead,  // Qwen 3, Gemma 3: over each head's head_dim values (weights [head_dim])
  Whole,    // OLMo 2: over the whole projection (weights [heads * head_dim])
};

// Biases of the attention projections:
enum class AttentionBias {
  None,         // never (Mistral, Phi-3)
  Key,          // config "attention_bias": on q, k, v and o (Llama, Qwen 3, Gemma, SmolLM3, OLMo 2)
  QkvAlways,    // Qwen 2: always on q, k, v, never on o
};

// Which layers attend through a sliding window (config "sliding_window"):
enum class SlidingRule {
  None,                 // never (Llama, OLMo 2)
  AllLayers,            // every layer when sliding_window is set (Mistral, Phi-3)
  LayerTypes,           // layers whose layer_types entry is "sliding_attention" (Gemma 2/3)
  LayerTypesIfEnabled,  // the same, only with use_sliding_window (Qwen 2/3, SmolLM3)
};

// transformers' default layer_types when config.json has none:
enum class DefaultLayerTypes {
  AllFull,
  EveryOther,        // Gemma 2: layer i slides when (i + 1) % 2 != 0
  Pattern,           // Gemma 3: layer i slides when (i + 1) % sliding_window_pattern != 0
  FromMaxWindow,     // Qwen 2/3: layer i slides when i >= max_window_layers (and a window is on)
  NoRopeLayers,      // SmolLM3: layers without RoPE slide (when a window is on)
};

struct Family {
  std::string name;                      // "Qwen3"
  std::string causal_arch;               // architectures[0] of the causal LM: "Qwen3ForCausalLM"
  std::string classifier_arch;           // its *ForSequenceClassification ("" = none)
  std::vector<std::string> model_types;  // accepted model_type values; the first is written
  NormPlacement norms = NormPlacement::Pre;
  bool norm_unit_offset = false;   // Gemma: x̂ · (1 + w), the stored weight w (zeros = identity)
  bool norm_scale_fp32 = false;    // the weight multiplies the fp32 normalised values before the cast
                                   // (Gemma, OLMo 2); else the cast comes first (Llama). bf16 only.
  QkNorm qk_norm = QkNorm::None;
  bool fused_qkv = false;          // Phi-3: self_attn.qkv_proj = [q; k; v] rows
  bool fused_gate_up = false;      // Phi-3: mlp.gate_up_proj = [gate; up] rows
  bool embed_scaled = false;       // Gemma: embeddings × sqrt(hidden_size), rounded to the model's dtype
  AttentionBias attention_bias = AttentionBias::Key;
  bool mlp_bias_key = false;       // reads "mlp_bias" (Llama, SmolLM3); else the MLP has no biases
  bool attn_softcap = false;       // Gemma 2 applies attn_logit_softcapping (Gemma 3 has the key, unused)
  bool final_softcap = false;      // reads final_logit_softcapping (Gemma 2/3)
  bool query_pre_attn_scalar = false;  // scores scaled by query_pre_attn_scalar^-1/2 (Gemma), else head_dim^-1/2
  bool partial_rotary = false;     // reads partial_rotary_factor (Phi-3/4: RoPE on part of each head)
  bool local_rope = false;         // sliding layers have their own RoPE (Gemma 3: rope_local_base_freq)
  bool nope_layers = false;        // reads no_rope_layers / no_rope_layer_interval (SmolLM3)
  SlidingRule sliding = SlidingRule::None;
  DefaultLayerTypes default_layer_types = DefaultLayerTypes::AllFull;
  std::vector<std::string> rope_types;   // rope types transformers accepts for it ({} = all)
  std::string act_key = "hidden_act";    // the activation's key ("hidden_activation" for Gemma)
  Json defaults;                         // transformers' class defaults of keys config.json may omit
                                         // (not num_key_value_heads: absent, it is num_attention_heads, as
                                         // for Llama, where a class default of 32 would break the shape)
  std::string gguf_arch;                 // llama.cpp's general.architecture ("" = no GGUF export)
};

// Every supported family, in a fixed order.
const std::vector<Family>& families();

// The family of architectures[0] (a causal LM or a classifier); nullptr when unsupported.
const Family* find_family(const std::string& architecture);
// The same, or an rlf::Error naming `source`, the architecture and the supported ones.
const Family& family_of(const std::string& architecture, const std::string& source);
// "LlamaForCausalLM, MistralForCausalLM, ..." (causal LMs), for error messages and docs.
std::string supported_architectures();

// True for "*ForSequenceClassification" architecture names.
bool is_classifier_architecture(const std::string& architecture);

}  // namespace rlf

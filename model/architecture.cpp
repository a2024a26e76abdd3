#include "model/architecture.h"

#include "util/error.h"

namespace rlf {

namespace {

// Each entry follows transformers 5.24's modeling_<family>.py and
// configuration_<family>.py (class defaults as Config() reports them).
std::vector<Family> make_families() {
  std::vector<Family> out;
  {
    Family f;
    f.name = "Llama";
    f.causal_arch = "LlamaForCausalLM";
    f.classifier_arch = "LlamaForSequenceClassification";
    f.model_types = {"llama"};
    f.mlp_bias_key = true;
    f.defaults = {{"tie_word_embeddings", false}, {"max_position_embeddings", 2048}, {"rms_norm_eps", 1e-6}};
    f.gguf_arch = "llama";
    out.push_back(f);
  }
  {
    Family f;
    f.name = "Mistral";
    f.causal_arch = "MistralForCausalLM";
    f.classifier_arch = "MistralForSequenceClassification";
    f.model_types = {"mistral"};
    f.attention_bias = AttentionBias::None;
    f.sliding = SlidingRule::AllLayers;
    f.defaults = {{"tie_word_embeddings", false}, {"max_position_embeddings", 131072}, {"rms_norm_eps", 1e-6},
                  {"sliding_window", 4096}};
    f.gguf_arch = "llama";
    out.push_back(f);
  }
  {
    Family f;
    f.name = "Qwen2";
    f.causal_arch = "Qwen2ForCausalLM";
    f.classifier_arch = "Qwen2ForSequenceClassification";
    f.model_types = {"qwen2"};
    f.attention_bias = AttentionBias::QkvAlways;
    f.sliding = SlidingRule::LayerTypesIfEnabled;
    f.default_layer_types = DefaultLayerTypes::FromMaxWindow;
    f.defaults = {{"tie_word_embeddings", false}, {"max_position_embeddings", 32768}, {"rms_norm_eps", 1e-6},
                  {"use_sliding_window", false}, {"max_window_layers", 28}};
    f.gguf_arch = "qwen2";
    out.push_back(f);
  }
  {
    Family f;
    f.name = "Qwen3";
    f.causal_arch = "Qwen3ForCausalLM";
    f.classifier_arch = "Qwen3ForSequenceClassification";
    f.model_types = {"qwen3"};
    f.qk_norm = QkNorm::PerHead;
    f.sliding = SlidingRule::LayerTypesIfEnabled;
    f.default_layer_types = DefaultLayerTypes::FromMaxWindow;
    f.defaults = {{"tie_word_embeddings", false}, {"max_position_embeddings", 32768}, {"rms_norm_eps", 1e-6},
                  {"head_dim", 128},          {"use_sliding_window", false},       {"max_window_layers", 28}};
    f.gguf_arch = "qwen3";
    out.push_back(f);
  }
  {
    Family f;
    f.name = "Gemma2";
    f.causal_arch = "Gemma2ForCausalLM";
    f.classifier_arch = "Gemma2ForSequenceClassification";
    f.model_types = {"gemma2"};
    f.norms = NormPlacement::Sandwich;
    f.norm_unit_offset = true;
    f.norm_scale_fp32 = true;
    f.embed_scaled = true;
    f.attn_softcap = true;
    f.final_softcap = true;
    f.query_pre_attn_scalar = true;
    f.sliding = SlidingRule::LayerTypes;
    f.default_layer_types = DefaultLayerTypes::EveryOther;
    f.act_key = "hidden_activation";
    f.defaults = {{"tie_word_embeddings", true},        {"max_position_embeddings", 8192},
                  {"rms_norm_eps", 1e-6},               {"head_dim", 256},
                  {"query_pre_attn_scalar", 256},       {"sliding_window", 4096},
                  {"final_logit_softcapping", 30.0},    {"attn_logit_softcapping", 50.0},
                  {"hidden_activation", "gelu_pytorch_tanh"}};
    f.gguf_arch = "gemma2";
    out.push_back(f);
  }
  {
    Family f;
    f.name = "Gemma3";
    f.causal_arch = "Gemma3ForCausalLM";
    f.classifier_arch = "Gemma3TextForSequenceClassification";
    f.model_types = {"gemma3_text"};
    f.norms = NormPlacement::Sandwich;
    f.norm_unit_offset = true;
    f.norm_scale_fp32 = true;
    f.qk_norm = QkNorm::PerHead;
    f.embed_scaled = true;
    f.final_softcap = true;
    f.query_pre_attn_scalar = true;
    f.local_rope = true;
    f.sliding = SlidingRule::LayerTypes;
    f.default_layer_types = DefaultLayerTypes::Pattern;
    f.act_key = "hidden_activation";
    f.defaults = {{"tie_word_embeddings", true},  {"max_position_embeddings", 131072},
                  {"rms_norm_eps", 1e-6},         {"head_dim", 256},
                  {"query_pre_attn_scalar", 256}, {"sliding_window", 4096},
                  {"rope_theta", 1000000.0},      {"rope_local_base_freq", 10000.0},
                  {"sliding_window_pattern", 6},  {"hidden_activation", "gelu_pytorch_tanh"}};
    f.gguf_arch = "gemma3";
    out.push_back(f);
  }
  {
    Family f;
    f.name = "Phi3";
    f.causal_arch = "Phi3ForCausalLM";
    f.classifier_arch = "Phi3ForSequenceClassification";
    f.model_types = {"phi3"};
    f.fused_qkv = true;
    f.fused_gate_up = true;
    f.partial_rotary = true;
    f.attention_bias = AttentionBias::None;
    f.sliding = SlidingRule::AllLayers;
    f.rope_types = {"default", "longrope"};
    f.defaults = {{"tie_word_embeddings", false}, {"max_position_embeddings", 4096}, {"rms_norm_eps", 1e-5},
                  {"original_max_position_embeddings", 4096}};
    f.gguf_arch = "phi3";
    out.push_back(f);
  }
  {
    Family f;
    f.name = "SmolLM3";
    f.causal_arch = "SmolLM3ForCausalLM";
    f.classifier_arch = "SmolLM3ForSequenceClassification";
    f.model_types = {"smollm3"};
    f.mlp_bias_key = true;
    f.nope_layers = true;
    f.sliding = SlidingRule::LayerTypesIfEnabled;
    f.default_layer_types = DefaultLayerTypes::NoRopeLayers;
    f.defaults = {{"tie_word_embeddings", true}, {"max_position_embeddings", 32768}, {"rms_norm_eps", 1e-6},
                  {"rope_theta", 2000000.0},     {"use_sliding_window", false},     {"no_rope_layer_interval", 4}};
    f.gguf_arch = "smollm3";
    out.push_back(f);
  }
  {
    Family f;
    f.name = "Olmo2";
    f.causal_arch = "Olmo2ForCausalLM";
    f.classifier_arch = "Olmo2ForSequenceClassification";
    f.model_types = {"olmo2"};
    f.norms = NormPlacement::Post;
    f.norm_scale_fp32 = true;
    f.qk_norm = QkNorm::Whole;
    f.defaults = {{"tie_word_embeddings", false}, {"max_position_embeddings", 2048}, {"rms_norm_eps", 1e-5}};
    f.gguf_arch = "olmo2";
    out.push_back(f);
  }
  return out;
}

}  // namespace

const std::vector<Family>& families() {
  static const std::vector<Family> all = make_families();
  return all;
}

const Family* find_family(const std::string& architecture) {
  for (const Family& f : families())
    if (architecture == f.causal_arch || (!f.classifier_arch.empty() && architecture == f.classifier_arch)) return &f;
  return nullptr;
}

std::string supported_architectures() {
  std::string s;
  for (const Family& f : families()) s += (s.empty() ? "" : ", ") + f.causal_arch;
  return s;
}

const Family& family_of(const std::string& architecture, const std::string& source) {
  const Family* f = find_family(architecture);
  if (!f && architecture == "Gemma3ForConditionalGeneration")
    fail(source, ": architecture 'Gemma3ForConditionalGeneration' is Gemma 3 with its vision tower; rlf runs the "
                 "text models (Gemma3ForCausalLM, as google/gemma-3-1b-* ship)");
  check(f != nullptr, source, ": unsupported architecture '", architecture, "' in 'architectures' (supported: ",
        supported_architectures(), " and their *ForSequenceClassification reward models)");
  return *f;
}

bool is_classifier_architecture(const std::string& architecture) {
  const std::string k = "ForSequenceClassification";
  return architecture.size() > k.size() && architecture.compare(architecture.size() - k.size(), k.size(), k) == 0;
}

}  // namespace rlf

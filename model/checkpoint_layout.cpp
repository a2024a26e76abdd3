#include "model/checkpoint_layout.h"

#include <set>

#include "util/error.h"

namespace rlf {

std::vector<ExpectedTensor> expected_tensors(const ModelConfig& config) {
  const Family& f = config.family();
  const int64_t d = config.hidden_size, hd = config.resolved_head_dim();
  const int64_t q = config.num_attention_heads * hd, kv = config.num_key_value_heads * hd;
  const int64_t ff = config.intermediate_size;
  std::vector<ExpectedTensor> out;
  out.push_back({"model.embed_tokens.weight", {config.vocab_size, d}});
  for (int64_t i = 0; i < config.num_hidden_layers; ++i) {
    const std::string p = "model.layers." + std::to_string(i) + ".";
    auto linear = [&](const std::string& name, int64_t rows, int64_t cols, bool bias) {
      out.push_back({p + name + ".weight", {rows, cols}});
      if (bias) out.push_back({p + name + ".bias", {rows}});
    };
    if (f.norms != NormPlacement::Post) out.push_back({p + "input_layernorm.weight", {d}});
    if (f.fused_qkv) {
      linear("self_attn.qkv_proj", q + 2 * kv, d, config.attention_bias);
    } else {
      linear("self_attn.q_proj", q, d, config.attention_bias);
      linear("self_attn.k_proj", kv, d, config.attention_bias);
      linear("self_attn.v_proj", kv, d, config.attention_bias);
    }
    linear("self_attn.o_proj", d, q, config.o_bias);
    if (f.qk_norm == QkNorm::PerHead) {
      out.push_back({p + "self_attn.q_norm.weight", {hd}});
      out.push_back({p + "self_attn.k_norm.weight", {hd}});
    } else if (f.qk_norm == QkNorm::Whole) {
      out.push_back({p + "self_attn.q_norm.weight", {q}});
      out.push_back({p + "self_attn.k_norm.weight", {kv}});
    }
    out.push_back({p + "post_attention_layernorm.weight", {d}});
    if (f.norms == NormPlacement::Sandwich) out.push_back({p + "pre_feedforward_layernorm.weight", {d}});
    if (f.fused_gate_up) {
      linear("mlp.gate_up_proj", 2 * ff, d, config.mlp_bias);
    } else {
      linear("mlp.gate_proj", ff, d, config.mlp_bias);
      linear("mlp.up_proj", ff, d, config.mlp_bias);
    }
    linear("mlp.down_proj", d, ff, config.mlp_bias);
    if (f.norms != NormPlacement::Pre) out.push_back({p + "post_feedforward_layernorm.weight", {d}});
  }
  out.push_back({"model.norm.weight", {d}});
  if (config.is_classifier()) out.push_back({"score.weight", {config.num_labels, d}});
  else if (!config.tie_word_embeddings) out.push_back({"lm_head.weight", {config.vocab_size, d}});
  return out;
}

namespace {

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

void check_tensors(const ModelConfig& config, const TensorMap& tensors, const std::string& source) {
  std::set<std::string> expected_names;
  for (const auto& e : expected_tensors(config)) {
    expected_names.insert(e.name);
    auto it = tensors.find(e.name);
    check(it != tensors.end(), source, ": missing tensor '", e.name, "' (expected shape ", shape_string(e.shape),
          "; the checkpoint does not match its config.json)");
    const TensorView& v = it->second;
    check(v.shape == e.shape, source, ": tensor '", e.name, "' has shape ", shape_string(v.shape), ", expected ",
          shape_string(e.shape), " from the config");
    check(is_weight_dtype(v.dtype), source, ": tensor '", e.name, "' has dtype ", dtype_name(v.dtype),
          " (model weights must be F32, F16 or BF16)");
  }
  for (const auto& [name, v] : tensors) {
    if (expected_names.count(name) || ends_with(name, ".rotary_emb.inv_freq")) continue;
    if (name == "lm_head.weight" && config.tie_word_embeddings && !config.is_classifier() &&
        v.shape == std::vector<int64_t>{config.vocab_size, config.hidden_size})
      continue;
    // PPO's value head on the policy's trunk (value.shared; CausalLMImpl::add_value_head): loaded by a model
    // that has one, ignored by every other reader.
    if (name == "v_head.weight" && !config.is_classifier() && v.shape == std::vector<int64_t>{1, config.hidden_size})
      continue;
    fail(source, ": unexpected tensor '", name, "' with shape ", shape_string(v.shape),
         " (not a parameter of this model config; wrong config.json?)");
  }
}

}  // namespace rlf

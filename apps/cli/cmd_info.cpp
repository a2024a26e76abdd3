// rlf info: what a model is (architecture, size, dtype, vocabulary).
#include <iostream>

#include "apps/cli/commands.h"
#include "apps/cli/runtime.h"
#include "model/cpu_features.h"
#include "model/loader.h"
#include "util/error.h"

namespace rlf::cli {

namespace {

// What the family (model/architecture.h) and the per-layer choices make of
// this decoder, beyond the Llama shape above.
void describe_family(const ModelConfig& c, Json& j) {
  const Family& f = c.family();
  static const char* kNorms[] = {"pre", "sandwich", "post"};
  static const char* kQk[] = {"none", "per_head", "whole"};
  j["family"] = f.name;
  j["norms"] = kNorms[static_cast<int>(f.norms)];
  j["norm_unit_offset"] = f.norm_unit_offset;
  j["qk_norm"] = kQk[static_cast<int>(f.qk_norm)];
  j["fused_projections"] = f.fused_qkv || f.fused_gate_up;
  j["hidden_act"] = c.hidden_act;
  j["embeddings_scaled"] = f.embed_scaled;
  j["rotary_dim"] = c.rotary_dim();
  if (c.rope_scaling.factor > 0) j["rope_factor"] = c.rope_scaling.factor;
  if (c.rope_local_theta > 0) j["rope_local_theta"] = c.rope_local_theta;
  int64_t sliding = 0, no_rope = 0;
  for (int64_t l = 0; l < c.num_hidden_layers; ++l) {
    const LayerAttention a = c.layer_attention(l);
    sliding += a.window > 0;
    no_rope += a.rope < 0;
  }
  j["sliding_window"] = c.sliding_window > 0 ? Json(c.sliding_window) : Json(nullptr);
  j["sliding_layers"] = sliding;
  j["layers_without_rope"] = no_rope;
  j["attention_scale"] = c.attention_scale();
  j["attn_logit_softcapping"] = c.attn_logit_softcapping > 0 ? Json(c.attn_logit_softcapping) : Json(nullptr);
  j["final_logit_softcapping"] = c.final_logit_softcapping > 0 ? Json(c.final_logit_softcapping) : Json(nullptr);
  j["gguf_architecture"] = f.gguf_arch.empty() ? Json(nullptr) : Json(f.gguf_arch);
}

int run_info(const Args& args) {
  const std::string dtype = command_dtype(args, DtypeUse::Decoding);
  configure_threads(args, dtype, args.str("device"));
  LoadOptions load;
  load.dtype = dtype;
  load.device = args.str("device");
  LoadedModel m = load_model(args.positional().at(0), load);
  const ModelConfig& c = m.config;
  int64_t n_params = 0;
  for (const auto& p : m.model->parameters()) n_params += p.numel();
  Json j;
  j["path"] = m.source.string();
  j["format"] = m.format;
  j["architecture"] = c.architecture;
  j["model_type"] = c.model_type;
  j["params"] = n_params;
  j["stored_dtype"] = m.format == "llama2c" ? "float32" : c.torch_dtype;
  j["dtype"] = dtype_name(m.model->dtype());
  j["vocab_size"] = c.vocab_size;
  j["hidden_size"] = c.hidden_size;
  j["intermediate_size"] = c.intermediate_size;
  j["num_hidden_layers"] = c.num_hidden_layers;
  j["num_attention_heads"] = c.num_attention_heads;
  j["num_key_value_heads"] = c.num_key_value_heads;
  j["head_dim"] = c.resolved_head_dim();
  j["max_position_embeddings"] = c.max_position_embeddings;
  j["rope_theta"] = c.rope_theta;
  j["rope_scaling"] = c.rope_scaling.type.empty() ? Json(nullptr) : Json(c.rope_scaling.type);
  j["tie_word_embeddings"] = c.tie_word_embeddings;
  j["attention_bias"] = c.attention_bias;
  describe_family(c, j);
  j["tokenizer"] = m.tokenizer.string();
  j["cpu_bf16_matmul_fast"] = cpu_bf16_matmul_fast();  // model/cpu_features.h
  if (args.flag("json")) {
    std::cout << j.dump() << "\n";
  } else {
    for (auto& [k, v] : j.items()) std::cout << k << ": " << (v.is_string() ? v.get<std::string>() : v.dump()) << "\n";
  }
  return 0;
}

}  // namespace

CommandSpec make_info_command() {
  CommandSpec c;
  c.name = "info";
  c.summary = "describe a model: architecture and family, parameter count, dtype, vocabulary, attention and RoPE";
  c.usage = "MODEL";
  c.n_positional_min = c.n_positional_max = 1;
  c.options = {
      {"dtype", OptKind::String, "auto", "load in this dtype: auto (bf16 on a GPU, fp32 on a CPU), fp32 or bf16", "DTYPE"},
      {"json", OptKind::Flag, "false", "print one JSON object", ""},
  };
  c.run = run_info;
  return c;
}

}  // namespace rlf::cli

// ModelConfig from/to a Hugging Face config.json: the fields transformers
// writes, round trips, and errors naming the field.
#include <gtest/gtest.h>

#include "model/checkpoint_layout.h"
#include "model/config.h"
#include "tests/model/format_fixtures.h"

namespace rlf {
namespace {

using test::error_of;

// Sum of the element counts of expected_tensors(c): must equal c.n_params().
int64_t n_params_of_expected(const ModelConfig& c) {
  int64_t n = 0;
  for (const auto& e : expected_tensors(c)) {
    int64_t k = 1;
    for (int64_t d : e.shape) k *= d;
    n += k;
  }
  return n;
}

// As written by transformers 4.46.3 for a Llama 3.2-style config.
const char* kLlama32 = R"({
  "architectures": ["LlamaForCausalLM"], "attention_bias": false, "bos_token_id": 128000,
  "eos_token_id": [128001, 128008, 128009], "head_dim": 64, "hidden_act": "silu", "hidden_size": 2048,
  "intermediate_size": 8192, "max_position_embeddings": 131072, "mlp_bias": false, "model_type": "llama",
  "num_attention_heads": 32, "num_hidden_layers": 16, "num_key_value_heads": 8, "rms_norm_eps": 1e-05,
  "rope_scaling": {"factor": 32.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                   "original_max_position_embeddings": 8192, "rope_type": "llama3"},
  "rope_theta": 500000.0, "tie_word_embeddings": true, "torch_dtype": "bfloat16", "vocab_size": 128256})";

TEST(ModelConfig, ReadsLlama32) {
  ModelConfig c = ModelConfig::from_hf_json(Json::parse(kLlama32), "config.json");
  EXPECT_EQ(c.resolved_head_dim(), 64);
  EXPECT_EQ(c.eos_token_ids, (std::vector<int64_t>{128001, 128008, 128009}));
  EXPECT_EQ(c.bos_token_id, 128000);
  EXPECT_EQ(c.rope_scaling.type, "llama3");
  EXPECT_EQ(c.rope_scaling.factor, 32.0);
  EXPECT_TRUE(c.tie_word_embeddings);
  // Llama-3.2-1B has 1,235,814,400 parameters.
  EXPECT_EQ(c.n_params(), 1235814400);
  EXPECT_EQ(n_params_of_expected(c), c.n_params());
  ModelConfig back = ModelConfig::from_hf_json(c.to_hf_json(), "round trip");
  EXPECT_EQ(back.to_hf_json(), c.to_hf_json());
}

// transformers >= 5 (5.17.0 here) writes rope_theta and the scaling as one
// rope_parameters object: the same model as the 4.x layout above.
TEST(ModelConfig, ReadsTransformers5RopeParameters) {
  Json j = Json::parse(kLlama32);
  Json rp = j["rope_scaling"];
  rp["rope_theta"] = 500000.0;
  j.erase("rope_scaling");
  j.erase("rope_theta");
  j["rope_parameters"] = rp;
  ModelConfig c = ModelConfig::from_hf_json(j, "config.json");
  ModelConfig old = ModelConfig::from_hf_json(Json::parse(kLlama32), "config.json");
  EXPECT_EQ(c.rope_theta, 500000.0);
  EXPECT_EQ(c.rope_scaling.type, "llama3");
  EXPECT_EQ(c.to_hf_json(), old.to_hf_json());
  // Qwen2 in 5.x: default rope with its own theta.
  Json q = {{"architectures", {"Qwen2ForCausalLM"}}, {"model_type", "qwen2"}, {"vocab_size", 100},
            {"hidden_size", 16}, {"intermediate_size", 40}, {"num_hidden_layers", 2}, {"num_attention_heads", 4},
            {"rope_parameters", {{"rope_theta", 1000000.0}, {"rope_type", "default"}}}};
  ModelConfig qc = ModelConfig::from_hf_json(q, "q.json");
  EXPECT_EQ(qc.rope_theta, 1000000.0);
  EXPECT_TRUE(qc.rope_scaling.type.empty());
  q["rope_parameters"] = 3;
  EXPECT_EQ(test::error_of([&] { ModelConfig::from_hf_json(q, "q.json"); }),
            "q.json rope_parameters: expected an object");
}

TEST(ModelConfig, Qwen2AlwaysHasQkvBiases) {
  Json j = {{"architectures", {"Qwen2ForCausalLM"}}, {"model_type", "qwen2"}, {"vocab_size", 100},
            {"hidden_size", 16}, {"intermediate_size", 40}, {"num_hidden_layers", 2},
            {"num_attention_heads", 4}, {"num_key_value_heads", 2}};
  ModelConfig c = ModelConfig::from_hf_json(j, "q.json");
  EXPECT_TRUE(c.attention_bias);
  EXPECT_FALSE(c.o_bias);
  EXPECT_EQ(c.num_key_value_heads, 2);
  ModelConfig back = ModelConfig::from_hf_json(c.to_hf_json(), "round trip");
  EXPECT_TRUE(back.attention_bias);
  EXPECT_EQ(n_params_of_expected(c), c.n_params());
}

TEST(ModelConfig, SequenceClassifiersHaveAScoreHeadInsteadOfAnLmHead) {
  Json j = Json::parse(kLlama32);
  j["architectures"] = {"LlamaForSequenceClassification"};
  // transformers: num_labels, else the size of id2label, else 2.
  EXPECT_EQ(ModelConfig::from_hf_json(j, "c").num_labels, 2);
  j["id2label"] = {{"0", "a"}, {"1", "b"}, {"2", "c"}};
  EXPECT_EQ(ModelConfig::from_hf_json(j, "c").num_labels, 3);
  j["num_labels"] = 1;
  const ModelConfig c = ModelConfig::from_hf_json(j, "c");
  EXPECT_TRUE(c.is_classifier());
  EXPECT_EQ(c.num_labels, 1);
  const auto tensors = expected_tensors(c);
  EXPECT_EQ(tensors.back().name, "score.weight");
  EXPECT_EQ(tensors.back().shape, (std::vector<int64_t>{1, c.hidden_size}));
  for (const auto& t : tensors) EXPECT_NE(t.name, "lm_head.weight");
  EXPECT_EQ(n_params_of_expected(c), c.n_params());
  const Json out = c.to_hf_json();
  EXPECT_EQ(out["architectures"][0], "LlamaForSequenceClassification");
  EXPECT_EQ(out["num_labels"], 1);
  EXPECT_EQ(out["id2label"], Json({{"0", "LABEL_0"}}));
  EXPECT_EQ(ModelConfig::from_hf_json(out, "round trip").num_labels, 1);
  // with_labels switches the architecture both ways, per family.
  EXPECT_EQ(c.with_labels(0).architecture, "LlamaForCausalLM");
  ModelConfig q = c.with_labels(0);
  q.architecture = "Qwen2ForCausalLM";
  EXPECT_EQ(q.with_labels(4).architecture, "Qwen2ForSequenceClassification");
  j["num_labels"] = 0;
  EXPECT_NE(error_of([&] { ModelConfig::from_hf_json(j, "'c.json'"); }).find("'num_labels' must be > 0"), std::string::npos);
  ModelConfig bad = c;
  bad.num_labels = 0;
  EXPECT_NE(error_of([&] { bad.validate("cfg"); }).find("needs num_labels > 0"), std::string::npos);
}

TEST(ModelConfig, ErrorsNameTheField) {
  Json j = Json::parse(kLlama32);
  j.erase("hidden_size");
  EXPECT_EQ(error_of([&] { ModelConfig::from_hf_json(j, "'c.json'"); }), "'c.json': missing required field 'hidden_size'");
  j = Json::parse(kLlama32);
  j["architectures"] = {"GPT2LMHeadModel"};
  EXPECT_EQ(error_of([&] { ModelConfig::from_hf_json(j, "'c.json'"); }),
            "'c.json': unsupported architecture 'GPT2LMHeadModel' in 'architectures' (supported: LlamaForCausalLM, "
            "MistralForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM, Gemma2ForCausalLM, Gemma3ForCausalLM, "
            "Phi3ForCausalLM, SmolLM3ForCausalLM, Olmo2ForCausalLM and their *ForSequenceClassification reward "
            "models)");
  j["architectures"] = {"Gemma3ForConditionalGeneration"};
  EXPECT_NE(error_of([&] { ModelConfig::from_hf_json(j, "'c.json'"); }).find("rlf runs the text models (Gemma3ForCausalLM"),
            std::string::npos);
  j = Json::parse(kLlama32);
  j["num_key_value_heads"] = 7;
  EXPECT_EQ(error_of([&] { ModelConfig::from_hf_json(j, "'c.json'"); }),
            "'c.json': 'num_attention_heads' (32) must be a multiple of 'num_key_value_heads' (7)");
  j = Json::parse(kLlama32);
  j["eos_token_id"] = "</s>";
  EXPECT_EQ(error_of([&] { ModelConfig::from_hf_json(j, "'c.json'"); }).substr(0, 55),
            "'c.json': field 'eos_token_id' has the wrong type (stri");
  j["eos_token_id"] = nullptr;
  j["bos_token_id"] = nullptr;
  ModelConfig c = ModelConfig::from_hf_json(j, "'c.json'");
  EXPECT_TRUE(c.eos_token_ids.empty());
  EXPECT_FALSE(c.bos_token_id.has_value());
  j = Json::parse(kLlama32);
  j["rope_scaling"]["rope_type"] = "ntk-by-parts";
  EXPECT_EQ(error_of([&] { ModelConfig::from_hf_json(j, "'c.json'"); }),
            "'c.json' rope_scaling: rope type 'ntk-by-parts' is not supported (supported: default, linear, dynamic, "
            "yarn, longrope, llama3)");
  j["rope_scaling"] = {{"rope_type", "linear"}};
  EXPECT_EQ(error_of([&] { ModelConfig::from_hf_json(j, "'c.json'"); }),
            "'c.json' rope: rope type 'linear' needs 'factor' > 0 (got 0)");
  j = Json::parse(kLlama32);
  j["hidden_act"] = "gelu";
  EXPECT_EQ(error_of([&] { ModelConfig::from_hf_json(j, "'c.json'"); }),
            "'c.json': 'hidden_act' = 'gelu' is not supported (\"silu\" or \"gelu_pytorch_tanh\")");
  j = Json::parse(kLlama32);
  j["partial_rotary_factor"] = 0.5;  // Llama's modeling rotates whole heads: the key is not read
  EXPECT_EQ(ModelConfig::from_hf_json(j, "'c.json'").rotary_dim(), 64);
}


// Published configs of each family (as on the Hugging Face hub, 4.x layout;
// Phi-4-mini's 48 LongRoPE factors generated here). Parameter counts and the
// per-layer windows are transformers 5.24's for the same JSON (a meta-device
// model, tests/oracle has the script's recipe in docs/models.md).
const char* const k_qwen3_0_6b = R"({"architectures": ["Qwen3ForCausalLM"], "attention_bias": false, "attention_dropout": 0.0, "bos_token_id": 151643, "eos_token_id": 151645, "head_dim": 128, "hidden_act": "silu", "hidden_size": 1024, "initializer_range": 0.02, "intermediate_size": 3072, "max_position_embeddings": 40960, "max_window_layers": 28, "model_type": "qwen3", "num_attention_heads": 16, "num_hidden_layers": 28, "num_key_value_heads": 8, "rms_norm_eps": 1e-06, "rope_scaling": null, "rope_theta": 1000000, "sliding_window": null, "tie_word_embeddings": true, "torch_dtype": "bfloat16", "transformers_version": "4.51.0", "use_cache": true, "use_sliding_window": false, "vocab_size": 151936})";
const char* const k_gemma3_1b = R"({"architectures": ["Gemma3ForCausalLM"], "attention_bias": false, "attention_dropout": 0.0, "attn_logit_softcapping": null, "bos_token_id": 2, "cache_implementation": "hybrid", "eos_token_id": [1, 106], "final_logit_softcapping": null, "head_dim": 256, "hidden_activation": "gelu_pytorch_tanh", "hidden_size": 1152, "initializer_range": 0.02, "intermediate_size": 6912, "max_position_embeddings": 32768, "model_type": "gemma3_text", "num_attention_heads": 4, "num_hidden_layers": 26, "num_key_value_heads": 1, "pad_token_id": 0, "query_pre_attn_scalar": 256, "rms_norm_eps": 1e-06, "rope_local_base_freq": 10000, "rope_scaling": null, "rope_theta": 1000000, "sliding_window": 512, "sliding_window_pattern": 6, "torch_dtype": "bfloat16", "transformers_version": "4.50.0.dev0", "use_cache": true, "vocab_size": 262144})";
const char* const k_gemma2_2b = R"({"architectures": ["Gemma2ForCausalLM"], "attention_bias": false, "attention_dropout": 0.0, "attn_logit_softcapping": 50.0, "bos_token_id": 2, "cache_implementation": "hybrid", "eos_token_id": 1, "final_logit_softcapping": 30.0, "head_dim": 256, "hidden_act": "gelu_pytorch_tanh", "hidden_activation": "gelu_pytorch_tanh", "hidden_size": 2304, "initializer_range": 0.02, "intermediate_size": 9216, "max_position_embeddings": 8192, "model_type": "gemma2", "num_attention_heads": 8, "num_hidden_layers": 26, "num_key_value_heads": 4, "pad_token_id": 0, "query_pre_attn_scalar": 256, "rms_norm_eps": 1e-06, "rope_theta": 10000.0, "sliding_window": 4096, "torch_dtype": "float32", "use_cache": true, "vocab_size": 256000})";
const char* const k_phi4_mini = R"({"architectures": ["Phi3ForCausalLM"], "attention_bias": false, "attention_dropout": 0.0, "bos_token_id": 199999, "embd_pdrop": 0.0, "eos_token_id": 199999, "full_attn_mod": 1, "hidden_act": "silu", "hidden_size": 3072, "initializer_range": 0.02, "intermediate_size": 8192, "interpolate_factor": 1, "lm_head_bias": false, "max_position_embeddings": 131072, "mlp_bias": false, "model_type": "phi3", "num_attention_heads": 24, "num_hidden_layers": 32, "num_key_value_heads": 8, "original_max_position_embeddings": 4096, "pad_token_id": 199999, "partial_rotary_factor": 0.75, "resid_pdrop": 0.0, "rms_norm_eps": 1e-05, "rope_scaling": {"type": "longrope"}, "rope_theta": 10000.0, "sliding_window": 262144, "tie_word_embeddings": true, "torch_dtype": "bfloat16", "use_cache": true, "vocab_size": 200064})";
const char* const k_smollm3_3b = R"({"architectures": ["SmolLM3ForCausalLM"], "attention_bias": false, "attention_dropout": 0.0, "bos_token_id": null, "eos_token_id": 128012, "hidden_act": "silu", "hidden_size": 2048, "initializer_range": 0.02, "intermediate_size": 11008, "max_position_embeddings": 65536, "max_window_layers": 28, "mlp_bias": false, "model_type": "smollm3", "no_rope_layer_interval": 4, "no_rope_layers": [1, 1, 1, 0, 1, 1, 1, 0, 1, 1, 1, 0, 1, 1, 1, 0, 1, 1, 1, 0, 1, 1, 1, 0, 1, 1, 1, 0, 1, 1, 1, 0, 1, 1, 1, 0], "num_attention_heads": 16, "num_hidden_layers": 36, "num_key_value_heads": 4, "pad_token_id": 128004, "rms_norm_eps": 1e-06, "rope_scaling": null, "rope_theta": 5000000.0, "sliding_window": null, "torch_dtype": "bfloat16", "use_cache": false, "use_sliding_window": false, "vocab_size": 128256})";
const char* const k_olmo2_1b = R"({"architectures": ["Olmo2ForCausalLM"], "attention_bias": false, "attention_dropout": 0.0, "eos_token_id": 100257, "hidden_act": "silu", "hidden_size": 2048, "initializer_range": 0.02, "intermediate_size": 8192, "max_position_embeddings": 4096, "model_type": "olmo2", "num_attention_heads": 16, "num_hidden_layers": 16, "num_key_value_heads": 16, "pad_token_id": 100277, "rms_norm_eps": 1e-06, "rope_scaling": null, "rope_theta": 500000, "tie_word_embeddings": false, "torch_dtype": "float32", "use_cache": true, "vocab_size": 100352})";

struct RealConfig {
  const char* json;
  int64_t n_params;
  const char* family;
  std::vector<int64_t> windows;  // of the first 8 layers
};

TEST(ModelConfig, ReadsEachFamilysPublishedConfig) {
  const std::vector<RealConfig> cases = {
      {k_qwen3_0_6b, 596049920, "Qwen3", {0, 0, 0, 0, 0, 0, 0, 0}},
      {k_gemma3_1b, 999885952, "Gemma3", {512, 512, 512, 512, 512, 0, 512, 512}},
      {k_gemma2_2b, 2614341888, "Gemma2", {4096, 0, 4096, 0, 4096, 0, 4096, 0}},
      {k_phi4_mini, 3836021760, "Phi3", {262144, 262144, 262144, 262144, 262144, 262144, 262144, 262144}},
      {k_smollm3_3b, 3075098624, "SmolLM3", {0, 0, 0, 0, 0, 0, 0, 0}},
      {k_olmo2_1b, 1484916736, "Olmo2", {0, 0, 0, 0, 0, 0, 0, 0}}};
  for (const RealConfig& rc : cases) {
    Json j = Json::parse(rc.json);
    if (j["architectures"][0] == "Phi3ForCausalLM") {
      std::vector<double> shrt, lng;
      for (int i = 0; i < 48; ++i) shrt.push_back(1.0 + 0.01 * i), lng.push_back(1.0 + 0.5 * i);
      j["rope_scaling"]["short_factor"] = shrt;
      j["rope_scaling"]["long_factor"] = lng;
    }
    const ModelConfig c = ModelConfig::from_hf_json(j, rc.family);
    SCOPED_TRACE(rc.family);
    EXPECT_EQ(c.family().name, rc.family);
    EXPECT_EQ(c.n_params(), rc.n_params);
    for (int64_t l = 0; l < 8; ++l) EXPECT_EQ(c.layer_attention(l).window, rc.windows[l]) << "layer " << l;
    const ModelConfig back = ModelConfig::from_hf_json(c.to_hf_json(), "round trip");
    EXPECT_EQ(back.to_hf_json(), c.to_hf_json());
    EXPECT_EQ(back.n_params(), c.n_params());
    for (int64_t l = 0; l < c.num_hidden_layers; ++l) {
      EXPECT_EQ(back.layer_attention(l).window, c.layer_attention(l).window);
      EXPECT_EQ(back.layer_attention(l).rope, c.layer_attention(l).rope);
    }
  }
  // What each family makes of its keys.
  const ModelConfig qwen3 = ModelConfig::from_hf_json(Json::parse(k_qwen3_0_6b), "q");
  EXPECT_EQ(qwen3.resolved_head_dim(), 128);  // not 1024 / 16
  EXPECT_TRUE(qwen3.tie_word_embeddings);
  const ModelConfig gemma3 = ModelConfig::from_hf_json(Json::parse(k_gemma3_1b), "g");
  EXPECT_TRUE(gemma3.tie_word_embeddings);  // absent: Gemma's class default
  EXPECT_EQ(gemma3.rope_theta, 1e6);
  EXPECT_EQ(gemma3.rope_local_theta, 1e4);
  EXPECT_EQ(gemma3.layer_attention(0).rope, 1);  // sliding layers: the local table
  EXPECT_EQ(gemma3.layer_attention(5).rope, 0);
  EXPECT_EQ(gemma3.hidden_act, "gelu_pytorch_tanh");
  EXPECT_DOUBLE_EQ(gemma3.attention_scale(), 1.0 / 16.0);
  const ModelConfig gemma2 = ModelConfig::from_hf_json(Json::parse(k_gemma2_2b), "g2");
  EXPECT_EQ(gemma2.attn_logit_softcapping, 50.0);
  EXPECT_EQ(gemma2.final_logit_softcapping, 30.0);
  Json g3 = Json::parse(k_gemma3_1b);
  g3["attn_logit_softcapping"] = 20.0;  // Gemma 3's modeling never applies it
  EXPECT_EQ(ModelConfig::from_hf_json(g3, "g3").attn_logit_softcapping, 0.0);
  const ModelConfig smol = ModelConfig::from_hf_json(Json::parse(k_smollm3_3b), "s");
  EXPECT_EQ(smol.layer_attention(3).rope, -1);  // every 4th layer without RoPE
  EXPECT_EQ(smol.layer_attention(4).rope, 0);
  const ModelConfig olmo = ModelConfig::from_hf_json(Json::parse(k_olmo2_1b), "o");
  EXPECT_EQ(olmo.family().norms, NormPlacement::Post);
  const auto tensors = expected_tensors(olmo);
  EXPECT_EQ(tensors[1].name, "model.layers.0.self_attn.q_proj.weight");  // no input_layernorm
  // Phi-4-mini: fused projections, 96 of 128 dimensions rotated, LongRoPE switching at 4,096.
  Json phi = Json::parse(k_phi4_mini);
  phi["rope_scaling"]["short_factor"] = std::vector<double>(48, 1.0);
  phi["rope_scaling"]["long_factor"] = std::vector<double>(48, 2.0);
  const ModelConfig p = ModelConfig::from_hf_json(phi, "p");
  EXPECT_EQ(p.rotary_dim(), 96);
  EXPECT_EQ(p.rope_scaling.type, "longrope");
  EXPECT_EQ(p.rope_scaling.original_max_position_embeddings, 4096);
  EXPECT_EQ(expected_tensors(p)[2].name, "model.layers.0.self_attn.qkv_proj.weight");
  EXPECT_EQ(expected_tensors(p)[2].shape, (std::vector<int64_t>{(24 + 2 * 8) * 128, 3072}));
  phi["rope_scaling"]["long_factor"] = std::vector<double>(47, 2.0);
  EXPECT_EQ(error_of([&] { ModelConfig::from_hf_json(phi, "'p.json'"); }),
            "'p.json' rope: rope type 'longrope' needs short_factor and long_factor of rotary_dim / 2 = 48 values (got "
            "48 and 47)");
  phi["rope_scaling"] = {{"type", "dynamic"}, {"factor", 2.0}};
  EXPECT_NE(error_of([&] { ModelConfig::from_hf_json(phi, "'p.json'"); }).find("is not one transformers accepts for "
                                                                               "Phi3ForCausalLM"),
            std::string::npos);
}

}  // namespace
}  // namespace rlf

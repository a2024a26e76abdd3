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
            "MistralForCausalLM, Qwen2ForCausalLM and their *ForSequenceClassification reward models)");
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
  j["rope_scaling"]["rope_type"] = "yarn";
  EXPECT_EQ(error_of([&] { ModelConfig::from_hf_json(j, "'c.json'"); }),
            "'c.json': rope_scaling type 'yarn' is not supported (supported: none, \"llama3\")");
}

}  // namespace
}  // namespace rlf

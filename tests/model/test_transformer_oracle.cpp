// The transformer against Hugging Face transformers (the oracle venv): tiny
// random Llama, Llama-3 (llama3 rope scaling, GQA, tied), Qwen2 (q/k/v bias)
// and Mistral (GQA) models saved by transformers load in rlf with the same
// fp32 logits; what rlf saves loads back in transformers with the same logits.
#include <gtest/gtest.h>

#include <fstream>

#include "model/loader.h"
#include "tests/model/oracle_logits.h"
#include "tests/support/test_env.h"
#include "util/json_util.h"

namespace rlf {
namespace {

using test::json_to_tensor;

std::string oracle_script() { return test::source_path("tests/oracle/hf_tiny_models.py").string(); }

class HfOracle : public ::testing::TestWithParam<std::string> {};

TEST_P(HfOracle, LogitsMatchTransformersAndSavedModelLoadsBack) {
  RLF_REQUIRE_ORACLE();
  test::TempDir dir;
  const std::string kind = GetParam();
  auto made = test::run_command(test::shell_quote(test::oracle_python()) + " " + test::shell_quote(oracle_script()) +
                                " make " + kind + " " + test::shell_quote((dir / "hf").string()));
  ASSERT_EQ(made.exit_code, 0) << made.output;

  Json ref = read_json_file((dir / "hf/oracle_logits.json").string());
  auto ids = json_to_tensor(ref["ids"]).to(torch::kInt64);
  auto expected = json_to_tensor(ref["logits"]);

  LoadedModel m = load_model(dir / "hf");
  torch::NoGradGuard ng;
  // Both inference paths: the fp32 CPU fast path (default) and the module path.
  for (bool fast : {true, false}) {
    m.model->set_fast_cpu_path(fast);
    auto logits = m.model->forward(ids).to(torch::kFloat32);
    ASSERT_EQ(logits.sizes(), expected.sizes());
    const double err = (logits - expected).abs().max().item<double>();
    EXPECT_LT(err, 2e-5) << kind << (fast ? " (fast path)" : " (module path)") << ": max |rlf - transformers| = " << err;
  }
  m.model->set_fast_cpu_path(true);

  // rlf saves -> transformers loads -> same logits.
  save_model(*m.model, dir / "saved");
  std::ofstream(dir / "ids.json") << ref["ids"].dump();
  auto back = test::run_command(test::shell_quote(test::oracle_python()) + " " + test::shell_quote(oracle_script()) +
                                " logits " + test::shell_quote((dir / "saved").string()) + " " +
                                test::shell_quote((dir / "ids.json").string()) + " " +
                                test::shell_quote((dir / "back.json").string()));
  ASSERT_EQ(back.exit_code, 0) << back.output;
  auto reloaded = json_to_tensor(read_json_file((dir / "back.json").string())["logits"]);
  const double err2 = (reloaded - expected).abs().max().item<double>();
  EXPECT_LT(err2, 1e-6) << kind << ": transformers on rlf's saved model differs by " << err2;
}

INSTANTIATE_TEST_SUITE_P(Architectures, HfOracle, ::testing::Values("llama", "llama3", "qwen2", "mistral"));

TEST(Transformer, KvCacheDecodingEqualsFullForward) {
  ModelConfig c = ModelConfig::preset("stories260K");
  auto model = make_random_model(c, 7, torch::kFloat32, torch::kCPU);
  torch::NoGradGuard ng;
  auto ids = torch::randint(0, c.vocab_size, {2, 10}, torch::kInt64);
  auto full = model->forward(ids);  // [2, 10, V]

  KVCache cache(c, 2, 32, torch::kFloat32, torch::kCPU);
  auto pos = torch::arange(6, torch::kInt64).unsqueeze(0).expand({2, 6}).contiguous();
  auto h = model->forward_hidden(ids.narrow(1, 0, 6), pos, &cache);
  std::vector<torch::Tensor> steps = {model->logits(h)};
  for (int64_t t = 6; t < 10; ++t) {
    auto p = torch::full({2, 1}, t, torch::kInt64);
    steps.push_back(model->logits(model->forward_hidden(ids.narrow(1, t, 1), p, &cache)));
  }
  auto incremental = torch::cat(steps, 1);
  EXPECT_LT((incremental - full).abs().max().item<double>(), 1e-5);
}

TEST(Transformer, TokenLogprobsEqualLogSoftmaxGather) {
  ModelConfig c = ModelConfig::preset("stories260K");
  auto model = make_random_model(c, 3, torch::kFloat32, torch::kCPU);
  torch::NoGradGuard ng;
  auto ids = torch::randint(0, c.vocab_size, {3, 9}, torch::kInt64);
  auto pos = torch::arange(9, torch::kInt64).unsqueeze(0).expand({3, 9}).contiguous();
  auto h = model->forward_hidden(ids, pos);
  auto targets = torch::randint(0, c.vocab_size, {3, 9}, torch::kInt64);
  auto lp = model->token_logprobs(h, targets);
  auto ref = torch::log_softmax(model->logits(h), -1).gather(-1, targets.unsqueeze(-1)).squeeze(-1);
  EXPECT_LT((lp - ref).abs().max().item<double>(), 1e-5);
}

TEST(Transformer, Bf16ForwardTracksFp32) {
  ModelConfig c = ModelConfig::preset("stories260K");
  auto m32 = make_random_model(c, 5, torch::kFloat32, torch::kCPU);
  auto m16 = make_random_model(c, 5, torch::kBFloat16, torch::kCPU);
  torch::NoGradGuard ng;
  auto ids = torch::randint(0, c.vocab_size, {2, 12}, torch::kInt64);
  auto a = torch::softmax(m32->forward(ids), -1);
  auto b = torch::softmax(m16->forward(ids).to(torch::kFloat32), -1);
  EXPECT_EQ(m16->dtype(), torch::kBFloat16);
  EXPECT_LT((a - b).abs().max().item<double>(), 0.02);
}

TEST(Transformer, ParameterNamesAreHuggingFaceNames) {
  ModelConfig c = ModelConfig::preset("stories260K");
  CausalLM m(c);
  auto params = m->named_parameters();
  EXPECT_TRUE(params.contains("model.embed_tokens.weight"));
  EXPECT_TRUE(params.contains("model.layers.4.self_attn.k_proj.weight"));
  EXPECT_TRUE(params.contains("model.layers.0.mlp.down_proj.weight"));
  EXPECT_TRUE(params.contains("model.norm.weight"));
  EXPECT_FALSE(params.contains("lm_head.weight"));  // tied
  c.tie_word_embeddings = false;
  CausalLM untied(c);
  EXPECT_TRUE(untied->named_parameters().contains("lm_head.weight"));
}

}  // namespace
}  // namespace rlf

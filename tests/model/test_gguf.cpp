// GGUF export (model/gguf.h) read back by the `gguf` package (llama.cpp's
// Python reader, the oracle venv): metadata, tokenizer, and every tensor —
// f32 equal to llama2.c's own file (whose q/k rows are in the interleaved
// order llama.cpp expects), f16 to the fp16 rounding, q8_0 within one
// quantization step of each block. With RLF_LLAMA_CPP_PYTHON (an interpreter
// with llama-cpp-python), llama.cpp continues a prompt greedily as rlf does.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>

#include "model/gguf.h"
#include "model/llama2c.h"
#include "model/loader.h"
#include "model/safetensors.h"
#include "rollout/policy.h"
#include "tests/support/test_env.h"
#include "tokenizer/llama2c_tokenizer.h"
#include "util/fs.h"
#include "util/json_util.h"

namespace rlf {
namespace {

std::filesystem::path stories() { return test::shared_path("models/stories260K/stories260K.bin"); }

// The gguf package's view of `file`: meta.json and tensors.safetensors in `dir`.
Json read_with_gguf(const std::filesystem::path& file, const std::filesystem::path& dir) {
  std::filesystem::create_directories(dir);
  auto r = test::run_command(test::shell_quote(test::oracle_python()) + " " +
                             test::shell_quote(test::source_path("tests/oracle/gguf_read.py").string()) + " " +
                             test::shell_quote(file.string()) + " " + test::shell_quote(dir.string()));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  return r.exit_code == 0 ? read_json_file((dir / "meta.json").string()) : Json();
}

TEST(GgufOracle, TheGgufPackageReadsTheExportInEveryType) {
  RLF_REQUIRE_ORACLE();
  test::TempDir dir;
  Policy policy = load_policy(stories(), "", LoadOptions{});
  const auto* tok = dynamic_cast<const Llama2cTokenizer*>(policy.tokenizer.get());
  ASSERT_NE(tok, nullptr);
  Llama2cCheckpoint raw(stories());  // llama2.c's layout: q/k interleaved, as GGUF wants them
  const ModelConfig& c = raw.config();
  // HF name -> GGUF name for the matrices.
  auto gguf_name = [](const std::string& hf) -> std::string {
    if (hf == "model.embed_tokens.weight") return "token_embd.weight";
    if (hf == "model.norm.weight") return "output_norm.weight";
    const std::pair<const char*, const char*> parts[] = {
        {"input_layernorm", "attn_norm"}, {"self_attn.q_proj", "attn_q"}, {"self_attn.k_proj", "attn_k"},
        {"self_attn.v_proj", "attn_v"},   {"self_attn.o_proj", "attn_output"}, {"post_attention_layernorm", "ffn_norm"},
        {"mlp.gate_proj", "ffn_gate"},    {"mlp.up_proj", "ffn_up"},          {"mlp.down_proj", "ffn_down"}};
    const size_t a = std::string("model.layers.").size(), b = hf.find('.', a);
    const std::string layer = hf.substr(a, b - a), rest = hf.substr(b + 1);
    for (const auto& [from, to] : parts)
      if (rest == std::string(from) + ".weight") return "blk." + layer + "." + to + ".weight";
    return "?" + hf;
  };
  for (const char* type : {"f32", "f16", "q8_0"}) {
    SCOPED_TRACE(type);
    const auto file = dir / (std::string(type) + ".gguf");
    export_gguf(*policy.model(), *policy.tokenizer, file, parse_gguf_type(type), "stories260K");
    const Json meta = read_with_gguf(file, dir / type);
    ASSERT_TRUE(meta.is_object());
    EXPECT_EQ(meta["general.architecture"], "llama");
    EXPECT_EQ(meta["general.name"], "stories260K");
    EXPECT_EQ(meta["llama.block_count"], c.num_hidden_layers);
    EXPECT_EQ(meta["llama.embedding_length"], c.hidden_size);
    EXPECT_EQ(meta["llama.feed_forward_length"], c.intermediate_size);
    EXPECT_EQ(meta["llama.attention.head_count"], c.num_attention_heads);
    EXPECT_EQ(meta["llama.attention.head_count_kv"], c.num_key_value_heads);
    EXPECT_EQ(meta["llama.rope.dimension_count"], c.resolved_head_dim());
    EXPECT_EQ(meta["llama.context_length"], c.max_position_embeddings);
    EXPECT_EQ(meta["tokenizer.ggml.model"], "llama");
    EXPECT_EQ(meta["tokenizer.ggml.bos_token_id"], 1);
    EXPECT_EQ(meta["tokenizer.ggml.eos_token_id"], 2);
    ASSERT_EQ(meta["tokenizer.ggml.tokens"].size(), 512u);
    EXPECT_EQ(meta["tokenizer.ggml.tokens"][1], "<s>");
    EXPECT_EQ(meta["tokenizer.ggml.token_type"][0], 2);
    EXPECT_EQ(meta["tokenizer.ggml.token_type"][3], 6);  // <0x00>
    for (int32_t id = 3; id < 512; ++id) {
      std::string piece = tok->token_string(id), expect;
      for (char ch : piece) expect += ch == ' ' ? std::string("\xE2\x96\x81") : std::string(1, ch);
      ASSERT_EQ(meta["tokenizer.ggml.tokens"][id], expect) << id;
      ASSERT_EQ(meta["tokenizer.ggml.scores"][id].get<double>(), static_cast<double>(tok->score(id))) << id;
    }
    SafetensorsFile back(dir / type / "tensors.safetensors");
    EXPECT_EQ(back.tensors().size(), raw.tensors().size());
    for (const auto& [hf, view] : raw.tensors()) {
      SCOPED_TRACE(hf);
      const std::string g = gguf_name(hf);
      ASSERT_TRUE(back.contains(g)) << g;
      const torch::Tensor want = tensor_from_view(view).reshape(view.shape);  // the raw file's bytes
      const torch::Tensor got = tensor_from_view(back.view(g));
      ASSERT_EQ(got.sizes(), want.sizes());
      const bool matrix = want.dim() == 2;
      if (std::string(type) == "f32" || !matrix) {
        EXPECT_TRUE(torch::equal(got, want));
      } else if (std::string(type) == "f16" || want.size(1) % 32 != 0) {
        EXPECT_TRUE(torch::equal(got, want.to(torch::kHalf).to(torch::kFloat32)));
      } else {
        // q8_0: blocks of 32 along a row; each within one step d = max|x| / 127 of its block.
        const auto blocks = want.reshape({-1, 32});
        const auto step = blocks.abs().amax(1, true) / 127.0;
        EXPECT_TRUE(((got.reshape({-1, 32}) - blocks).abs() <= step * 1.01 + 1e-12).all().item<bool>());
        EXPECT_EQ(meta["_tensors"][g]["type"], "Q8_0");
      }
    }
  }
}

TEST(Gguf, WhatItCannotExportIsNamed) {
  test::TempDir dir;
  ModelConfig c = ModelConfig::preset("stories260K");
  c.num_hidden_layers = 1;
  c.attention_bias = true;
  CausalLM biased = make_random_model(c, 1, torch::kFloat32, torch::kCPU);
  Llama2cTokenizer tok(test::shared_path("models/stories260K/tok512.bin"));
  const std::string e = test::error_of([&] { export_gguf(*biased, tok, dir / "x.gguf", GgufType::F32); });
  EXPECT_NE(e.find("has projection biases"), std::string::npos) << e;
  EXPECT_NE(test::error_of([] { parse_gguf_type("q4_k"); }).find("'q4_k' is not supported"), std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(dir / "x.gguf"));
}

// Weights that would make a GGUF file of garbage are refused, naming the
// tensor: a NaN (in every type; in q8_0 it would become a NaN block scale), a
// value beyond float16's range in f16. Bad targets are refused before any work.
TEST(Gguf, NonFiniteWeightsAndBadTargetsAreRefused) {
  test::TempDir dir;
  ModelConfig c = ModelConfig::preset("stories260K");
  c.num_hidden_layers = 1;
  CausalLM m = make_random_model(c, 1, torch::kFloat32, torch::kCPU);
  Llama2cTokenizer tok(test::shared_path("models/stories260K/tok512.bin"));
  torch::NoGradGuard ng;
  auto params = m->named_parameters();
  params["model.layers.0.self_attn.q_proj.weight"][3][5] = std::numeric_limits<float>::quiet_NaN();
  for (GgufType type : {GgufType::F32, GgufType::F16, GgufType::Q8_0}) {
    const std::string e = test::error_of([&] { export_gguf(*m, tok, dir / "x.gguf", type); });
    EXPECT_NE(e.find("tensor 'model.layers.0.self_attn.q_proj.weight' holds 1 NaN value (of 4096)"), std::string::npos)
        << e;
  }
  params["model.layers.0.self_attn.q_proj.weight"][3][5] = 0.0f;
  params["model.layers.0.mlp.up_proj.weight"][0][0] = 1e6f;
  const std::string big = test::error_of([&] { export_gguf(*m, tok, dir / "x.gguf", GgufType::F16); });
  EXPECT_NE(big.find("tensor 'blk.0.ffn_up.weight' has values beyond float16's range"), std::string::npos) << big;
  EXPECT_FALSE(std::filesystem::exists(dir / "x.gguf"));
  export_gguf(*m, tok, dir / "x.gguf", GgufType::F32);  // f32 holds it
  EXPECT_TRUE(std::filesystem::is_regular_file(dir / "x.gguf"));
  // A directory as the target, or a missing directory: refused, nothing made.
  const std::string d = test::error_of([&] { export_gguf(*m, tok, dir.path(), GgufType::F32); });
  EXPECT_NE(d.find("is a directory: rlf writes regular files only"), std::string::npos) << d;
  const std::string missing = test::error_of([&] { export_gguf(*m, tok, dir / "new/x.gguf", GgufType::F32); });
  EXPECT_NE(missing.find("directory '" + (dir / "new").string() + "' does not exist"), std::string::npos) << missing;
  EXPECT_FALSE(std::filesystem::exists(dir / "new"));
}

// llama.cpp itself (llama-cpp-python, built from source: not part of the test
// environment, whose set-up would compile llama.cpp on every clean CI run).
TEST(GgufLlamaCpp, LlamaCppContinuesAPromptGreedilyAsRlfDoes) {
  const char* py = std::getenv("RLF_LLAMA_CPP_PYTHON");
  if (!py || !*py)
    GTEST_SKIP() << "set RLF_LLAMA_CPP_PYTHON to an interpreter with llama-cpp-python (bench/setup_llama_cpp.sh) to run "
                    "llama.cpp on the export";
  test::TempDir dir;
  // stories260K (llama2.c's pretrained weights), and a 2-layer random Llama
  // with 256-wide rows and untied output (weights x5: a greedy path without near-ties).
  {
    ModelConfig c = ModelConfig::preset("stories260K");
    c.hidden_size = 256;
    c.intermediate_size = 768;
    c.num_hidden_layers = 2;
    c.tie_word_embeddings = false;
    CausalLM m = make_random_model(c, 11, torch::kFloat32, torch::kCPU);
    torch::NoGradGuard ng;
    for (auto& p : m->named_parameters())
      if (p.key().find("norm") == std::string::npos) p.value().mul_(5.0);
    SaveOptions so;
    so.tokenizer_source = test::shared_path("models/stories260K/tok512.bin");
    save_model(*m, dir / "random", so);
  }
  for (const std::filesystem::path& source : {stories(), dir / "random"}) {
    SCOPED_TRACE(source.string());
    Policy policy = load_policy(source, "", LoadOptions{});
    export_gguf(*policy.model(), *policy.tokenizer, dir / "m.gguf", GgufType::F32, "test");
    const std::vector<int32_t> prompt = policy.tokenizer->encode("Once upon a time, there was a", true);
    // rlf's greedy continuation: argmax of the full forward, token by token.
    std::vector<int64_t> ids(prompt.begin(), prompt.end());
    std::vector<int64_t> ours;
    {
      torch::NoGradGuard ng;
      for (int k = 0; k < 40; ++k) {
        auto logits = policy.model()->forward(torch::tensor(ids).unsqueeze(0));
        const int64_t next = logits[0][-1].argmax().item<int64_t>();
        ours.push_back(next);
        ids.push_back(next);
      }
    }
    std::ofstream(dir / "prompt.json") << Json(prompt).dump();
    auto r = test::run_command(test::shell_quote(py) + " " +
                               test::shell_quote(test::source_path("tests/oracle/llama_cpp_greedy.py").string()) + " " +
                               test::shell_quote((dir / "m.gguf").string()) + " " +
                               test::shell_quote((dir / "prompt.json").string()) + " 40 2>/dev/null");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const auto lines = split_lines(r.output);
    ASSERT_FALSE(lines.empty());
    const Json theirs = Json::parse(lines.back());
    EXPECT_EQ(theirs["ids"], Json(ours)) << "llama.cpp: " << theirs.dump();
    // llama.cpp's tokenizer on the export's vocabulary agrees with rlf's.
    EXPECT_EQ(theirs["prompt_ids"], Json(prompt));
  }
}

}  // namespace
}  // namespace rlf

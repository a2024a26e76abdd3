// Hugging Face model directories: tiny Llama/Qwen2 models saved by
// `transformers` (single file and sharded) read against expected_tensors(); a
// directory written by us loads back in `transformers` with identical weights;
// generation_config.json; missing files and mismatching tensors with exact text.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <set>

#include "model/checkpoint_layout.h"
#include "model/hf_dir.h"
#include "model/safetensors.h"
#include "tests/model/format_fixtures.h"
#include "tests/support/test_env.h"
#include "util/fs.h"

namespace rlf {
namespace {

using test::error_of;

// Saves tiny random models with transformers into argv[1]/{llama,sharded,qwen,biased}
// and prints, per directory, every tensor's float64 sum.
const char* kSaveModels = R"PY(
import sys, json, torch
from transformers import LlamaConfig, LlamaForCausalLM, Qwen2Config, Qwen2ForCausalLM, GenerationConfig
torch.manual_seed(0)
out = sys.argv[1]
small = dict(vocab_size=100, hidden_size=16, intermediate_size=40, num_hidden_layers=2,
             num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64)
llama = LlamaForCausalLM(LlamaConfig(**small))
llama.generation_config = GenerationConfig(bos_token_id=1, eos_token_id=[2, 7], do_sample=True,
                                           temperature=0.6, top_p=0.9, top_k=20, max_new_tokens=33)
llama.save_pretrained(out + "/llama")
llama.save_pretrained(out + "/sharded", max_shard_size="10KB")
qwen = Qwen2ForCausalLM(Qwen2Config(**small, tie_word_embeddings=True))
qwen.save_pretrained(out + "/qwen")
biased = LlamaForCausalLM(LlamaConfig(**small, attention_bias=True, mlp_bias=True))
biased.save_pretrained(out + "/biased")
sums = {}
for name, m in [("llama", llama), ("qwen", qwen), ("biased", biased)]:
    sums[name] = {k: float(v.double().sum()) for k, v in m.state_dict().items()}
print(json.dumps(sums))
)PY";

class HfDirOracle : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (test::oracle_python().empty()) return;
    dir_ = new test::TempDir();
    auto r = test::run_oracle_python(kSaveModels, test::shell_quote(dir_->path().string()));
    ASSERT_EQ(r.exit_code, 0) << r.output;
    sums_ = new Json(parse_json(r.output, "oracle output"));
  }
  static void TearDownTestSuite() {
    delete dir_;
    delete sums_;
    dir_ = nullptr;
    sums_ = nullptr;
  }
  void SetUp() override {
    RLF_REQUIRE_ORACLE();
    ASSERT_NE(sums_, nullptr);
  }

  // The directory's tensors are exactly expected_tensors(config), and their
  // values sum as transformers' state_dict does.
  static void expect_matches(const HfModelDir& d, const Json& sums) {
    EXPECT_NO_THROW(d.check_tensors());
    auto expected = expected_tensors(d.config());
    std::set<std::string> names;
    for (const auto& e : expected) {
      names.insert(e.name);
      ASSERT_TRUE(d.tensors().count(e.name)) << e.name;
      const TensorView& v = d.tensors().at(e.name);
      EXPECT_EQ(v.shape, e.shape) << e.name;
      ASSERT_EQ(v.dtype, DType::F32) << e.name;
      std::vector<float> x(v.nbytes / 4);
      std::memcpy(x.data(), v.data, v.nbytes);
      double sum = 0;
      for (float f : x) sum += f;
      EXPECT_NEAR(sum, sums.at(e.name).get<double>(), 1e-9 * (1 + std::abs(sum))) << e.name;
    }
    EXPECT_EQ(d.tensors().size(), names.size());
  }

  static test::TempDir* dir_;
  static Json* sums_;
};

test::TempDir* HfDirOracle::dir_ = nullptr;
Json* HfDirOracle::sums_ = nullptr;

TEST_F(HfDirOracle, ReadsASingleFileLlama) {
  HfModelDir d(*dir_ / "llama");
  EXPECT_EQ(d.weights_path(), *dir_ / "llama" / "model.safetensors");
  EXPECT_EQ(d.config().num_key_value_heads, 2);
  EXPECT_FALSE(d.config().tie_word_embeddings);
  EXPECT_EQ(d.tensors().size(), 1u + 2 * 9 + 1 + 1);
  expect_matches(d, (*sums_)["llama"]);
  ASSERT_TRUE(d.has_generation_config());
  const GenerationDefaults& g = d.generation();
  EXPECT_EQ(g.bos_token_id, 1);
  EXPECT_EQ(g.eos_token_ids, (std::vector<int64_t>{2, 7}));
  EXPECT_EQ(g.do_sample, true);
  EXPECT_EQ(g.temperature, 0.6);
  EXPECT_EQ(g.top_p, 0.9);
  EXPECT_EQ(g.top_k, 20);
  EXPECT_EQ(g.max_new_tokens, 33);
}

TEST_F(HfDirOracle, ReadsAShardedLlama) {
  HfModelDir d(*dir_ / "sharded");
  EXPECT_EQ(d.weights_path().filename(), "model.safetensors.index.json");
  expect_matches(d, (*sums_)["llama"]);
}

TEST_F(HfDirOracle, ReadsATiedQwen2WithBiases) {
  HfModelDir d(*dir_ / "qwen");
  EXPECT_TRUE(d.config().tie_word_embeddings);
  EXPECT_TRUE(d.config().attention_bias);
  EXPECT_FALSE(d.config().o_bias);
  EXPECT_FALSE(d.tensors().count("lm_head.weight"));
  Json sums = (*sums_)["qwen"];
  sums.erase("lm_head.weight");  // tied: state_dict lists it, the file does not
  expect_matches(d, sums);
}

TEST_F(HfDirOracle, ReadsALlamaWithAttentionAndMlpBiases) {
  HfModelDir d(*dir_ / "biased");
  EXPECT_TRUE(d.config().o_bias);
  EXPECT_TRUE(d.tensors().count("model.layers.1.self_attn.o_proj.bias"));
  EXPECT_TRUE(d.tensors().count("model.layers.1.mlp.down_proj.bias"));
  expect_matches(d, (*sums_)["biased"]);
}

const char* kCompareWithTransformers = R"PY(
import sys, torch
from transformers import AutoModelForCausalLM, AutoTokenizer, GenerationConfig
a = AutoModelForCausalLM.from_pretrained(sys.argv[1])
b = AutoModelForCausalLM.from_pretrained(sys.argv[2])
sa, sb = a.state_dict(), b.state_dict()
assert sa.keys() == sb.keys(), (sa.keys() ^ sb.keys())
for k in sa:
    assert torch.equal(sa[k], sb[k]), k
g = GenerationConfig.from_pretrained(sys.argv[2])
assert g.eos_token_id == [2, 7] and g.temperature == 0.6 and g.top_k == 20, g
tok = AutoTokenizer.from_pretrained(sys.argv[2])
print("ok", len(sa), tok("Hello").input_ids)
)PY";

TEST_F(HfDirOracle, DirectoryWeWriteLoadsInTransformers) {
  HfModelDir src(*dir_ / "sharded");
  test::TempDir out;
  std::vector<SafetensorsWriteEntry> entries;
  for (const auto& [name, v] : src.tensors()) entries.push_back({name, v.dtype, v.shape, v.data, v.nbytes});
  write_safetensors(out / "model.safetensors", entries, {{"format", "pt"}});
  HfDirWriteOptions opts;
  opts.generation = src.generation();
  opts.tokenizer_source = test::shared_path("tokenizers/hf/llama2");
  write_hf_dir_files(out.path(), src.config(), opts);
  EXPECT_TRUE(fs::exists(out / "tokenizer.json"));
  EXPECT_TRUE(fs::exists(out / "tokenizer_config.json"));
  EXPECT_FALSE(fs::exists(out / "special_tokens_map.json"));  // absent in the source

  // We read our own directory back identically...
  HfModelDir back(out.path());
  EXPECT_EQ(back.config().to_hf_json(), src.config().to_hf_json());
  EXPECT_EQ(back.generation().to_json(), src.generation().to_json());
  back.check_tensors();
  // ...and so does transformers.
  auto r = test::run_oracle_python(kCompareWithTransformers,
                                   test::shell_quote((*dir_ / "llama").string()) + " " + test::shell_quote(out.path().string()));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("ok 21 [1, 15043]"), std::string::npos) << r.output;
}

TEST_F(HfDirOracle, ShapeMismatchNamesTheTensor) {
  HfModelDir d(*dir_ / "llama");
  ModelConfig c = d.config();
  c.intermediate_size = 48;
  EXPECT_EQ(error_of([&] { check_tensors(c, d.tensors(), "dir"); }),
            "dir: tensor 'model.layers.0.mlp.gate_proj.weight' has shape [40, 16], expected [48, 16] from the config");
  c = d.config();
  c.tie_word_embeddings = true;
  EXPECT_NO_THROW(check_tensors(c, d.tensors(), "dir"));  // a stray lm_head in a tied model is tolerated
  c = d.config();
  c.num_hidden_layers = 3;
  EXPECT_EQ(error_of([&] { check_tensors(c, d.tensors(), "dir"); }),
            "dir: missing tensor 'model.layers.2.input_layernorm.weight' (expected shape [16]; the checkpoint does "
            "not match its config.json)");
  c.num_hidden_layers = 1;
  EXPECT_EQ(error_of([&] { check_tensors(c, d.tensors(), "dir"); }),
            "dir: unexpected tensor 'model.layers.1.input_layernorm.weight' with shape [16] (not a parameter of "
            "this model config; wrong config.json?)");
  // A PPO value head on the trunk ([1, hidden], value.shared) is tolerated; another shape is not.
  c = d.config();
  TensorMap with_head = d.tensors();
  TensorView head = with_head.at("model.norm.weight");
  head.shape = {1, c.hidden_size};
  with_head["v_head.weight"] = head;
  EXPECT_NO_THROW(check_tensors(c, with_head, "dir"));
  with_head["v_head.weight"].shape = {2, c.hidden_size};
  EXPECT_NE(error_of([&] { check_tensors(c, with_head, "dir"); }).find("unexpected tensor 'v_head.weight'"),
            std::string::npos);
}

// ------------------------------------------------------------- without the oracle

// A hand-made directory: config.json for a 1-layer model and its weights.
struct TinyDir {
  test::TempDir dir;
  ModelConfig config;
  std::vector<std::vector<uint8_t>> buffers;
  TinyDir() {
    config.vocab_size = 8, config.hidden_size = 4, config.intermediate_size = 6, config.num_hidden_layers = 1;
    config.num_attention_heads = 2, config.num_key_value_heads = 1;
    write_hf_dir_files(dir.path(), config);
  }
  void write_weights(const std::function<void(ExpectedTensor&, DType&)>& edit = nullptr) {
    std::vector<SafetensorsWriteEntry> entries;
    buffers.clear();
    for (auto e : expected_tensors(config)) {
      DType dt = DType::F32;
      if (edit) edit(e, dt);
      int64_t n = 1;
      for (int64_t d : e.shape) n *= d;
      buffers.emplace_back(static_cast<size_t>(n) * dtype_size(dt), 0);
      entries.push_back({e.name, dt, e.shape, buffers.back().data(), buffers.back().size()});
    }
    write_safetensors(dir / "model.safetensors", entries);
  }
  std::string where() const { return "model directory '" + dir.path().string() + "'"; }
};

TEST(HfDir, ReadsAHandMadeDirectory) {
  TinyDir t;
  t.write_weights();
  HfModelDir d(t.dir.path());
  EXPECT_FALSE(d.has_generation_config());
  EXPECT_TRUE(d.generation().eos_token_ids.empty());
  d.check_tensors();
  EXPECT_EQ(d.tensors().size(), 1u + 9 + 1 + 1);
}

TEST(HfDir, MissingFilesNameTheDirectory) {
  test::TempDir empty;
  EXPECT_EQ(error_of([&] { HfModelDir d(empty / "nope"); }),
            "model directory '" + (empty / "nope").string() + "': not a directory");
  EXPECT_EQ(error_of([&] { HfModelDir d(empty.path()); }),
            "model directory '" + empty.path().string() +
                "': no config.json (expected a Hugging Face model directory as written by save_pretrained)");
  TinyDir t;
  EXPECT_EQ(error_of([&] { HfModelDir d(t.dir.path()); }),
            t.where() + ": no model.safetensors or model.safetensors.index.json");
  write_file_atomic(t.dir / "pytorch_model.bin", "x");
  EXPECT_EQ(error_of([&] { HfModelDir d(t.dir.path()); }),
            t.where() + ": no model.safetensors or model.safetensors.index.json (pytorch_model.bin is not supported: "
                        "re-save with save_pretrained(dir, safe_serialization=True))");
}

TEST(HfDir, WrongDtypeAndShapeNameTheTensor) {
  TinyDir t;
  t.write_weights([](ExpectedTensor& e, DType& dt) {
    if (e.name == "model.norm.weight") dt = DType::I32;
  });
  EXPECT_EQ(error_of([&] { HfModelDir(t.dir.path()).check_tensors(); }),
            t.where() + " (model.safetensors): tensor 'model.norm.weight' has dtype I32 (model weights must be F32, "
                        "F16 or BF16)");
  t.write_weights([](ExpectedTensor& e, DType& dt) {
    if (e.name == "model.layers.0.self_attn.k_proj.weight") e.shape = {4, 4};
    if (e.name == "model.embed_tokens.weight") dt = DType::BF16;
  });
  EXPECT_EQ(error_of([&] { HfModelDir(t.dir.path()).check_tensors(); }),
            t.where() + " (model.safetensors): tensor 'model.layers.0.self_attn.k_proj.weight' has shape [4, 4], "
                        "expected [2, 4] from the config");
}

TEST(HfDir, BadGenerationConfig) {
  TinyDir t;
  t.write_weights();
  const std::string gen = "'" + (t.dir / "generation_config.json").string() + "'";
  write_file_atomic(t.dir / "generation_config.json", R"({"top_p": 1.5})");
  EXPECT_EQ(error_of([&] { HfModelDir d(t.dir.path()); }), gen + ": 'top_p' must be in [0, 1] (got 1.5)");
  write_file_atomic(t.dir / "generation_config.json", R"({"eos_token_id": "2"})");
  const std::string wrong_type = gen + ": field 'eos_token_id' has the wrong type (string)";
  EXPECT_EQ(error_of([&] { HfModelDir d(t.dir.path()); }).substr(0, wrong_type.size()), wrong_type);
  write_file_atomic(t.dir / "generation_config.json", R"({"eos_token_id": 2, "max_new_tokens": null, "top_k": 0})");
  HfModelDir d(t.dir.path());
  EXPECT_EQ(d.generation().eos_token_ids, std::vector<int64_t>{2});
  EXPECT_FALSE(d.generation().max_new_tokens.has_value());
  EXPECT_EQ(d.generation().top_k, 0);
}

TEST(HfDir, WriterCopiesOnlyPresentTokenizerFiles) {
  test::TempDir out;
  ModelConfig c = ModelConfig::preset("stories260K");
  HfDirWriteOptions opts;
  opts.tokenizer_source = test::shared_path("tokenizers/hf/gpt2");
  write_hf_dir_files(out / "sub" / "dir", c, opts);
  EXPECT_EQ(read_file(out / "sub/dir/tokenizer.json"), read_file(test::shared_path("tokenizers/hf/gpt2/tokenizer.json")));
  EXPECT_FALSE(fs::exists(out / "sub/dir/generation_config.json"));
  EXPECT_FALSE(fs::exists(out / "sub/dir/tokenizer.model"));
  EXPECT_EQ(ModelConfig::from_hf_json(read_json_file((out / "sub/dir/config.json").string()), "x").to_hf_json(),
            c.to_hf_json());
  opts.tokenizer_source = out / "missing";
  EXPECT_EQ(error_of([&] { write_hf_dir_files(out.path(), c, opts); }),
            "tokenizer source '" + (out / "missing").string() + "' is not a directory");
}

}  // namespace
}  // namespace rlf

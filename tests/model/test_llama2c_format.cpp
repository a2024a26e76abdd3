// llama2.c checkpoints: the real stories260K file, an independent numpy reading
// of it (oracle), version 1 files, the RoPE row permutation (by hand, against
// Hugging Face's convert-script formula in torch, and as an equivalence of the
// two RoPE conventions), and every header error with its exact text.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <numeric>

#include "model/checkpoint_layout.h"
#include "model/llama2c.h"
#include "tests/model/format_fixtures.h"
#include "tests/support/test_env.h"
#include "util/fs.h"
#include "util/json_util.h"

namespace rlf {
namespace {

using test::error_of;

std::string stories_path() { return test::shared_path("models/stories260K/stories260K.bin").string(); }

std::vector<float> floats(const TensorView& v) {
  std::vector<float> out(v.nbytes / 4);
  std::memcpy(out.data(), v.data, v.nbytes);
  return out;
}

TEST(Llama2c, Stories260KHeaderAndConfig) {
  Llama2cCheckpoint ck(stories_path());
  const Llama2cHeader& h = ck.header();
  EXPECT_EQ(h.version, 0);
  EXPECT_EQ(h.weights_offset, 28u);
  EXPECT_EQ(h.file_size, 1056540u);
  const ModelConfig& c = ck.config();
  EXPECT_EQ(c.architecture, "LlamaForCausalLM");
  EXPECT_EQ(c.hidden_size, 64);
  EXPECT_EQ(c.num_hidden_layers, 5);
  EXPECT_EQ(c.num_attention_heads, 8);
  EXPECT_EQ(c.num_key_value_heads, 4);
  EXPECT_EQ(c.intermediate_size, 172);
  EXPECT_EQ(c.vocab_size, 512);
  EXPECT_EQ(c.max_position_embeddings, 512);
  EXPECT_TRUE(c.tie_word_embeddings);
  EXPECT_EQ(c.resolved_head_dim(), 8);
  EXPECT_EQ(c.rms_norm_eps, 1e-5);
  EXPECT_EQ(c.rope_theta, 10000.0);
  EXPECT_EQ(c.bos_token_id, 1);
  EXPECT_EQ(c.eos_token_ids, std::vector<int64_t>{2});
  // The hand-written preset agrees with the file.
  EXPECT_EQ(c.to_hf_json(), ModelConfig::preset("stories260K").to_hf_json());
}

TEST(Llama2c, Stories260KTensorsMatchTheExpectedLayout) {
  Llama2cCheckpoint ck(stories_path());
  EXPECT_NO_THROW(check_tensors(ck.config(), ck.tensors(), "stories260K"));
  EXPECT_EQ(ck.tensors().size(), expected_tensors(ck.config()).size());
  EXPECT_EQ(ck.tensors().size(), 47u);
  int64_t n = 0;
  for (const auto& [name, v] : ck.tensors()) {
    n += v.numel();
    int64_t want = name.find("q_proj") != std::string::npos ? 8 : name.find("k_proj") != std::string::npos ? 4 : 0;
    EXPECT_EQ(v.interleaved_rope_heads, want) << name;
    EXPECT_EQ(v.dtype, DType::F32);
  }
  EXPECT_EQ(n, ck.config().n_params());
}

// An independent reading of the file with numpy, following run.c's order.
const char* kNumpyReader = R"PY(
import sys, json, numpy as np
raw = open(sys.argv[1], "rb").read()
dim, hidden, L, H, KV, V, S = np.frombuffer(raw[:28], dtype=np.int32)
w = np.frombuffer(raw[28:], dtype=np.float32)
hs = dim // H
pos = 0
def take(*shape):
    global pos
    n = int(np.prod(shape)); a = w[pos:pos + n].reshape(shape); pos += n; return a
emb = take(abs(V), dim); att = take(L, dim); wq = take(L, H * hs, dim); wk = take(L, KV * hs, dim)
wv = take(L, KV * hs, dim); wo = take(L, dim, H * hs); ffn = take(L, dim); w1 = take(L, hidden, dim)
w2 = take(L, dim, hidden); w3 = take(L, hidden, dim); final = take(dim)
take(S, hs // 2); take(S, hs // 2)
assert pos == w.size and V > 0
t = {"model.embed_tokens.weight": emb, "model.norm.weight": final}
for i in range(L):
    p = f"model.layers.{i}."
    t.update({p + "input_layernorm.weight": att[i], p + "self_attn.q_proj.weight": wq[i],
              p + "self_attn.k_proj.weight": wk[i], p + "self_attn.v_proj.weight": wv[i],
              p + "self_attn.o_proj.weight": wo[i], p + "post_attention_layernorm.weight": ffn[i],
              p + "mlp.gate_proj.weight": w1[i], p + "mlp.down_proj.weight": w2[i], p + "mlp.up_proj.weight": w3[i]})
print(json.dumps({k: {"shape": list(a.shape), "sum": float(a.astype(np.float64).sum()),
                      "first": float(a.reshape(-1)[0]), "last": float(a.reshape(-1)[-1])} for k, a in t.items()}))
)PY";

TEST(Llama2cOracle, TensorsMatchAnIndependentNumpyReading) {
  RLF_REQUIRE_ORACLE();
  auto r = test::run_oracle_python(kNumpyReader, test::shell_quote(stories_path()));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  Json want = parse_json(r.output, "oracle output");
  Llama2cCheckpoint ck(stories_path());
  ASSERT_EQ(want.size(), ck.tensors().size());
  for (const auto& [name, w] : want.items()) {
    SCOPED_TRACE(name);
    ASSERT_TRUE(ck.tensors().count(name));
    const TensorView& v = ck.tensors().at(name);
    EXPECT_EQ(v.shape, w["shape"].get<std::vector<int64_t>>());
    auto x = floats(v);
    double sum = 0;
    for (float f : x) sum += f;
    EXPECT_EQ(x.front(), w["first"].get<float>());
    EXPECT_EQ(x.back(), w["last"].get<float>());
    EXPECT_NEAR(sum, w["sum"].get<double>(), 1e-9 * (1 + std::abs(sum)));
  }
}

// Writes the stories260K weights as a version 1 file (export.py's
// version1_export order) and checks it reads back to the same tensors.
TEST(Llama2c, Version1FileReadsTheSameTensors) {
  Llama2cCheckpoint v0(stories_path());
  const auto& h = v0.header();
  std::string s;
  test::put_i32(s, static_cast<int32_t>(kLlama2cMagic));
  test::put_i32(s, 1);
  for (int64_t v : {h.dim, h.hidden_dim, h.n_layers, h.n_heads, h.n_kv_heads, h.vocab_size, h.seq_len})
    test::put_i32(s, static_cast<int32_t>(v));
  s.push_back(1);  // shared classifier
  s.resize(256, '\0');
  auto append = [&](const std::string& name) {
    const TensorView& v = v0.tensors().at(name);
    s.append(reinterpret_cast<const char*>(v.data), v.nbytes);
  };
  auto per_layer = [&](const std::string& suffix) {
    for (int i = 0; i < h.n_layers; ++i) append("model.layers." + std::to_string(i) + "." + suffix);
  };
  per_layer("input_layernorm.weight");
  per_layer("post_attention_layernorm.weight");
  append("model.norm.weight");
  append("model.embed_tokens.weight");
  for (const char* m : {"self_attn.q_proj.weight", "self_attn.k_proj.weight", "self_attn.v_proj.weight",
                        "self_attn.o_proj.weight", "mlp.gate_proj.weight", "mlp.down_proj.weight",
                        "mlp.up_proj.weight"})
    per_layer(m);
  test::TempDir dir;
  write_file_atomic(dir / "v1.bin", s);
  Llama2cCheckpoint v1(dir / "v1.bin");
  EXPECT_EQ(v1.header().version, 1);
  EXPECT_EQ(v1.config().to_hf_json(), v0.config().to_hf_json());
  ASSERT_EQ(v1.tensors().size(), v0.tensors().size());
  for (const auto& [name, v] : v0.tensors()) {
    const TensorView& w = v1.tensors().at(name);
    EXPECT_EQ(w.shape, v.shape) << name;
    EXPECT_EQ(w.interleaved_rope_heads, v.interleaved_rope_heads) << name;
    EXPECT_EQ(std::memcmp(w.data, v.data, v.nbytes), 0) << name;
  }
}

TEST(Llama2c, NegativeVocabMeansASeparateClassifier) {
  // dim 4, hidden 6, 1 layer, 2 heads, 1 kv head, vocab 3 (unshared), seq_len 2; hs = 2, kv_dim = 2.
  const size_t n = 3 * 4 + 4 + 4 * 4 + 2 * 4 + 2 * 4 + 4 * 4 + 4 + 6 * 4 * 3 + 4 + 2 * 1 * 2 + 3 * 4;
  test::TempDir dir;
  write_file_atomic(dir / "m.bin", test::llama2c_v0_bytes({4, 6, 1, 2, 1, -3, 2}, n));
  Llama2cCheckpoint ck(dir / "m.bin");
  EXPECT_FALSE(ck.config().tie_word_embeddings);
  EXPECT_EQ(ck.config().vocab_size, 3);
  EXPECT_NO_THROW(check_tensors(ck.config(), ck.tensors(), "m"));
  // The classifier is the last 12 floats.
  auto lm = floats(ck.tensors().at("lm_head.weight"));
  EXPECT_EQ(lm.front(), static_cast<float>(n - 12));
  EXPECT_EQ(lm.back(), static_cast<float>(n - 1));
  // w1 (gate) precedes w2 (down) precedes w3 (up).
  EXPECT_EQ(floats(ck.tensors().at("model.layers.0.mlp.gate_proj.weight")).front(), 12.f + 4 + 16 + 8 + 8 + 16 + 4);
  EXPECT_EQ(floats(ck.tensors().at("model.layers.0.mlp.up_proj.weight")).front(), 12.f + 4 + 16 + 8 + 8 + 16 + 4 + 48);
}

// ------------------------------------------------------------- RoPE permutation

TEST(RopePermutation, ByHandOnASmallMatrix) {
  // 2 heads of head_dim 4, 2 columns: row r holds {10r, 10r + 1}.
  std::vector<float> src(16), dst(16);
  for (int r = 0; r < 8; ++r) src[2 * r] = 10.f * r, src[2 * r + 1] = 10.f * r + 1;
  permute_rope_rows(src.data(), dst.data(), 2, 4, 2);
  const int want_rows[8] = {0, 2, 1, 3, 4, 6, 5, 7};
  for (int r = 0; r < 8; ++r) {
    EXPECT_EQ(dst[2 * r], 10.f * want_rows[r]) << r;
    EXPECT_EQ(dst[2 * r + 1], 10.f * want_rows[r] + 1) << r;
  }
  EXPECT_EQ(error_of([&] { permute_rope_rows(src.data(), dst.data(), 2, 3, 2); }),
            "permute_rope_rows: need n_heads > 0 and an even head_dim > 0 (got n_heads 2, head_dim 3)");
}

// Interleaved RoPE on q (pairs 2i, 2i+1) then permuting equals permuting then
// rotate-half RoPE (pairs i, i + hs/2): the permuted weights give Hugging
// Face's model the same rotated queries/keys, hence the same attention scores.
TEST(RopePermutation, MakesRotateHalfEqualToInterleaved) {
  const int hs = 8, pos = 5;
  std::vector<float> q(hs);
  for (int i = 0; i < hs; ++i) q[i] = std::sin(1.0f + 3.0f * i);
  auto angle = [&](int i) { return pos * std::pow(10000.0, -2.0 * i / hs); };
  std::vector<float> inter(hs);
  for (int i = 0; i < hs / 2; ++i) {
    double c = std::cos(angle(i)), s = std::sin(angle(i));
    inter[2 * i] = q[2 * i] * c - q[2 * i + 1] * s;
    inter[2 * i + 1] = q[2 * i] * s + q[2 * i + 1] * c;
  }
  std::vector<float> pq(hs), pinter(hs), half(hs);
  permute_rope_rows(q.data(), pq.data(), 1, hs, 1);
  permute_rope_rows(inter.data(), pinter.data(), 1, hs, 1);
  for (int i = 0; i < hs / 2; ++i) {
    double c = std::cos(angle(i)), s = std::sin(angle(i));
    half[i] = pq[i] * c - pq[i + hs / 2] * s;
    half[i + hs / 2] = pq[i + hs / 2] * c + pq[i] * s;
  }
  for (int i = 0; i < hs; ++i) EXPECT_NEAR(half[i], pinter[i], 1e-6) << i;
}

const char* kTorchPermute = R"PY(
import sys, json, torch
n_heads, hs, dim = 4, 8, 6
w = torch.arange(n_heads * hs * dim, dtype=torch.float32).reshape(n_heads * hs, dim)
# Hugging Face's convert_llama_weights_to_hf.py permute()
p = w.view(n_heads, hs // 2, 2, dim).transpose(1, 2).reshape(n_heads * hs, dim)
print(json.dumps(p.reshape(-1).tolist()))
)PY";

TEST(RopePermutationOracle, MatchesHuggingFaceConvertScript) {
  RLF_REQUIRE_ORACLE();
  auto r = test::run_oracle_python(kTorchPermute);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  auto want = parse_json(r.output, "oracle output").get<std::vector<float>>();
  std::vector<float> src(4 * 8 * 6), dst(src.size());
  std::iota(src.begin(), src.end(), 0.f);
  permute_rope_rows(src.data(), dst.data(), 4, 8, 6);
  EXPECT_EQ(dst, want);
}

// ------------------------------------------------------------- errors

std::string header_error(const std::string& bytes) {
  return error_of([&] {
    parse_llama2c_header(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), "/m/model.bin");
  });
}

TEST(Llama2cErrors, TruncatedFile) {
  std::string bytes = read_file(stories_path());
  EXPECT_EQ(header_error(bytes.substr(0, bytes.size() - 4)),
            "'/m/model.bin': file is 1056536 bytes but its header (version 0: dim 64, hidden_dim 172, n_layers 5, "
            "n_heads 8, n_kv_heads 4, vocab_size 512, seq_len 512, shared classifier) implies 1056540 bytes "
            "(truncated, or not a llama2.c checkpoint)");
  EXPECT_EQ(header_error(bytes.substr(0, 20)),
            "'/m/model.bin': 20 bytes is too small for a llama2.c checkpoint (the header alone is 28 bytes)");
}

TEST(Llama2cErrors, NonPositiveDims) {
  EXPECT_EQ(header_error(test::llama2c_v0_bytes({64, 0, 5, 8, 4, 512, 512}, 0)),
            "'/m/model.bin': header field 'hidden_dim' = 0 must be > 0 (corrupt file or not a llama2.c checkpoint?)");
  EXPECT_EQ(header_error(test::llama2c_v0_bytes({64, 172, -5, 8, 4, 512, 512}, 0)),
            "'/m/model.bin': header field 'n_layers' = -5 must be > 0 (corrupt file or not a llama2.c checkpoint?)");
  EXPECT_EQ(header_error(test::llama2c_v0_bytes({64, 172, 5, 8, 4, 0, 512}, 0)),
            "'/m/model.bin': header field 'vocab_size' = 0 is invalid");
}

TEST(Llama2cErrors, InconsistentHeads) {
  EXPECT_EQ(header_error(test::llama2c_v0_bytes({64, 172, 5, 8, 3, 512, 512}, 0)),
            "'/m/model.bin': n_heads (8) must be a multiple of n_kv_heads (3)");
  EXPECT_EQ(header_error(test::llama2c_v0_bytes({60, 172, 5, 8, 4, 512, 512}, 0)),
            "'/m/model.bin': dim (60) must be divisible by n_heads (8)");
  EXPECT_EQ(header_error(test::llama2c_v0_bytes({24, 172, 5, 8, 4, 512, 512}, 0)),
            "'/m/model.bin': head size dim / n_heads = 3 must be even for RoPE");
}

TEST(Llama2cErrors, HugeDimsDoNotOverflow) {
  EXPECT_EQ(header_error(test::llama2c_v0_bytes({2147483646, 2147483647, 2147483647, 1, 1, 2147483647, 2147483647}, 0)),
            "'/m/model.bin': header (dim 2147483646, hidden_dim 2147483647, n_layers 2147483647, n_heads 1, "
            "n_kv_heads 1, vocab_size 2147483647, seq_len 2147483647, shared classifier) implies an impossibly large "
            "file (corrupt header?)");
  // 2^62 floats: the byte count passes 2^64 only when multiplied by 4.
  EXPECT_EQ(header_error(test::llama2c_v0_bytes({1 << 30, 2, 4, 2, 2, 1, 2}, 0)).substr(0, 64),
            "'/m/model.bin': header (dim 1073741824, hidden_dim 2, n_layers 4");
}

TEST(Llama2cErrors, UnsupportedVersions) {
  std::string s;
  test::put_i32(s, static_cast<int32_t>(kLlama2cMagic));
  test::put_i32(s, 2);
  s.resize(256, '\0');
  EXPECT_EQ(header_error(s),
            "'/m/model.bin': llama2.c version 2 (Q8_0 quantized) checkpoints are not supported; export with "
            "export.py --version 0 or 1 (fp32)");
  s[4] = 7;
  EXPECT_EQ(header_error(s), "'/m/model.bin': unknown llama2.c checkpoint version 7 (supported: 0, 1)");
  EXPECT_EQ(header_error(s.substr(0, 100)),
            "'/m/model.bin': 100 bytes is too small for a versioned llama2.c checkpoint (the header is 256 bytes)");
  s[4] = 1;
  for (int i = 0; i < 7; ++i) std::memcpy(&s[8 + 4 * i], std::vector<int32_t>{4, 6, 1, 2, 1, 3, 2}.data() + i, 4);
  s[36] = 5;
  EXPECT_EQ(header_error(s), "'/m/model.bin': header field 'shared_classifier' = 5 must be 0 or 1");
}

TEST(Llama2cErrors, CheckpointErrorNamesTheFile) {
  test::TempDir dir;
  write_file_atomic(dir / "bad.bin", test::llama2c_v0_bytes({64, 172, 5, 8, 3, 512, 512}, 4));
  EXPECT_EQ(error_of([&] { Llama2cCheckpoint ck(dir / "bad.bin"); }),
            "'" + (dir / "bad.bin").string() + "': n_heads (8) must be a multiple of n_kv_heads (3)");
}

}  // namespace
}  // namespace rlf

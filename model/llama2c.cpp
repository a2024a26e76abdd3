#include "model/llama2c.h"

#include <cstring>
#include <vector>

#include "util/error.h"
#include "util/mapped_file.h"

namespace rlf {

namespace {

constexpr uint64_t kV0HeaderBytes = 7 * 4;
constexpr uint64_t kV1HeaderBytes = 256;

int32_t read_i32(const uint8_t* p) {
  uint32_t v = uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
  int32_t out;
  std::memcpy(&out, &v, 4);
  return out;
}

// One run of fp32 values in the file: a weight (stacked over layers when
// per_layer) under a Hugging Face name with "{i}" for the layer, or skipped
// data (empty name).
struct Block {
  std::string name;             // "model.layers.{i}.self_attn.q_proj.weight"; "" = skip
  bool per_layer = false;
  std::vector<int64_t> shape;   // of one layer's tensor
  int64_t rope_heads = 0;       // > 0: rows in interleaved RoPE order
};

int64_t numel(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

// The file's weights in order. Dims must already be validated positive and
// consistent; sizes here fit in int64 once the total is checked in 128 bits.
std::vector<Block> layout(const Llama2cHeader& h) {
  const int64_t D = h.dim, F = h.hidden_dim, V = h.vocab_size, hs = h.head_size();
  const int64_t Q = h.n_heads * hs, KV = h.n_kv_heads * hs;
  const std::string L = "model.layers.{i}.";
  const Block emb{"model.embed_tokens.weight", false, {V, D}};
  const Block att_norm{L + "input_layernorm.weight", true, {D}};
  const Block ffn_norm{L + "post_attention_layernorm.weight", true, {D}};
  const Block final_norm{"model.norm.weight", false, {D}};
  const Block mats[] = {
      {L + "self_attn.q_proj.weight", true, {Q, D}, h.n_heads},
      {L + "self_attn.k_proj.weight", true, {KV, D}, h.n_kv_heads},
      {L + "self_attn.v_proj.weight", true, {KV, D}},
      {L + "self_attn.o_proj.weight", true, {D, Q}},
  };
  const Block ffn[] = {
      {L + "mlp.gate_proj.weight", true, {F, D}},  // w1
      {L + "mlp.down_proj.weight", true, {D, F}},  // w2
      {L + "mlp.up_proj.weight", true, {F, D}},    // w3
  };
  std::vector<Block> out;
  if (h.version == 0) {
    out = {emb, att_norm, mats[0], mats[1], mats[2], mats[3], ffn_norm, ffn[0], ffn[1], ffn[2], final_norm};
    out.push_back({"", false, {h.seq_len, hs / 2}});  // freq_cis_real
    out.push_back({"", false, {h.seq_len, hs / 2}});  // freq_cis_imag
  } else {
    out = {att_norm, ffn_norm, final_norm, emb, mats[0], mats[1], mats[2], mats[3], ffn[0], ffn[1], ffn[2]};
  }
  if (!h.shared_classifier) out.push_back({"lm_head.weight", false, {V, D}});
  return out;
}

std::string layer_name(const std::string& pattern, int64_t layer) {
  std::string s = pattern;
  auto pos = s.find("{i}");
  if (pos != std::string::npos) s.replace(pos, 3, std::to_string(layer));
  return s;
}

}  // namespace

Llama2cHeader parse_llama2c_header(const uint8_t* data, size_t file_size, const std::string& source) {
  const std::string file = "'" + source + "'";
  check(file_size >= kV0HeaderBytes, file, ": ", file_size,
        " bytes is too small for a llama2.c checkpoint (the header alone is 28 bytes)");
  Llama2cHeader h;
  const uint8_t* params = data;
  if (static_cast<uint32_t>(read_i32(data)) == kLlama2cMagic) {
    check(file_size >= kV1HeaderBytes, file, ": ", file_size,
          " bytes is too small for a versioned llama2.c checkpoint (the header is 256 bytes)");
    h.version = read_i32(data + 4);
    check(h.version != 2, file, ": llama2.c version 2 (Q8_0 quantized) checkpoints are not supported; "
          "export with export.py --version 0 or 1 (fp32)");
    check(h.version == 1, file, ": unknown llama2.c checkpoint version ", h.version, " (supported: 0, 1)");
    params = data + 8;
    h.weights_offset = kV1HeaderBytes;
  } else {
    h.weights_offset = kV0HeaderBytes;
  }
  const char* names[] = {"dim", "hidden_dim", "n_layers", "n_heads", "n_kv_heads", "vocab_size", "seq_len"};
  int32_t v[7];
  for (int i = 0; i < 7; ++i) v[i] = read_i32(params + 4 * i);
  for (int i = 0; i < 7; ++i) {
    if (i == 5 && h.version == 0) {
      check(v[i] != 0 && v[i] != INT32_MIN, file, ": header field 'vocab_size' = ", v[i], " is invalid");
      continue;
    }
    check(v[i] > 0, file, ": header field '", names[i], "' = ", v[i], " must be > 0 (corrupt file or not a llama2.c checkpoint?)");
  }
  h.dim = v[0], h.hidden_dim = v[1], h.n_layers = v[2], h.n_heads = v[3], h.n_kv_heads = v[4], h.seq_len = v[6];
  if (h.version == 0) {
    h.shared_classifier = v[5] > 0;  // legacy: the sign of vocab_size is the flag
    h.vocab_size = v[5] > 0 ? v[5] : -static_cast<int64_t>(v[5]);
  } else {
    uint8_t shared = data[8 + 7 * 4];
    check(shared <= 1, file, ": header field 'shared_classifier' = ", int(shared), " must be 0 or 1");
    h.shared_classifier = shared == 1;
    h.vocab_size = v[5];
  }
  check(h.n_heads % h.n_kv_heads == 0, file, ": n_heads (", h.n_heads, ") must be a multiple of n_kv_heads (",
        h.n_kv_heads, ")");
  check(h.dim % h.n_heads == 0, file, ": dim (", h.dim, ") must be divisible by n_heads (", h.n_heads, ")");
  check(h.head_size() % 2 == 0, file, ": head size dim / n_heads = ", h.head_size(), " must be even for RoPE");

  // Every dim is < 2^31, so each product of three fits in 128 bits.
  unsigned __int128 total = h.weights_offset;
  for (const Block& b : layout(h)) {
    unsigned __int128 n = 4;
    for (int64_t d : b.shape) n *= static_cast<uint64_t>(d);
    if (b.per_layer) n *= static_cast<uint64_t>(h.n_layers);
    total += n;
  }
  auto header_text = str("dim ", h.dim, ", hidden_dim ", h.hidden_dim, ", n_layers ", h.n_layers, ", n_heads ",
                         h.n_heads, ", n_kv_heads ", h.n_kv_heads, ", vocab_size ", h.vocab_size, ", seq_len ",
                         h.seq_len, h.shared_classifier ? ", shared classifier" : ", separate classifier");
  check(total <= static_cast<unsigned __int128>(UINT64_MAX), file, ": header (", header_text,
        ") implies an impossibly large file (corrupt header?)");
  h.file_size = static_cast<uint64_t>(total);
  check(h.file_size == file_size, file, ": file is ", file_size, " bytes but its header (version ", h.version, ": ",
        header_text, ") implies ", h.file_size, " bytes (truncated, or not a llama2.c checkpoint)");
  return h;
}

ModelConfig llama2c_config(const Llama2cHeader& h) {
  ModelConfig c;
  c.architecture = "LlamaForCausalLM";
  c.model_type = "llama";
  c.vocab_size = h.vocab_size;
  c.hidden_size = h.dim;
  c.intermediate_size = h.hidden_dim;
  c.num_hidden_layers = h.n_layers;
  c.num_attention_heads = h.n_heads;
  c.num_key_value_heads = h.n_kv_heads;
  c.head_dim = 0;  // dim / n_heads
  c.max_position_embeddings = h.seq_len;
  c.rms_norm_eps = 1e-5;  // llama2.c's rmsnorm
  c.rope_theta = 10000.0;
  c.tie_word_embeddings = h.shared_classifier;
  c.attention_bias = false;
  c.o_bias = false;
  c.mlp_bias = false;
  c.hidden_act = "silu";
  c.torch_dtype = "float32";
  c.bos_token_id = 1;  // llama2.c's sentencepiece vocabularies: <s> = 1, </s> = 2
  c.eos_token_ids = {2};
  c.validate("llama2.c header");
  return c;
}

Llama2cCheckpoint::Llama2cCheckpoint(const std::filesystem::path& path) : path_(path.string()) {
  auto map = std::make_shared<const MappedFile>(path_);
  static const uint8_t kEmpty[1] = {0};
  header_ = parse_llama2c_header(map->size() ? map->data() : kEmpty, map->size(), path_);
  config_ = with_context("'" + path_ + "'", [&] { return llama2c_config(header_); });
  map_ = std::move(map);

  const uint8_t* p = map_->data() + header_.weights_offset;
  for (const Block& b : layout(header_)) {
    const size_t nbytes = static_cast<size_t>(numel(b.shape)) * 4;
    const int64_t copies = b.per_layer ? header_.n_layers : 1;
    for (int64_t layer = 0; layer < copies; ++layer, p += nbytes) {
      if (b.name.empty()) continue;
      TensorView v;
      v.data = p;
      v.nbytes = nbytes;
      v.dtype = DType::F32;
      v.shape = b.shape;
      v.interleaved_rope_heads = b.rope_heads;
      v.keep_alive = map_;
      tensors_.emplace(layer_name(b.name, layer), std::move(v));
    }
  }
}

void permute_rope_rows(const float* src, float* dst, int64_t n_heads, int64_t head_dim, int64_t n_cols) {
  check(n_heads > 0 && head_dim > 0 && head_dim % 2 == 0 && n_cols >= 0,
        "permute_rope_rows: need n_heads > 0 and an even head_dim > 0 (got n_heads ", n_heads, ", head_dim ",
        head_dim, ")");
  const int64_t half = head_dim / 2;
  const size_t row_bytes = static_cast<size_t>(n_cols) * sizeof(float);
  for (int64_t h = 0; h < n_heads; ++h) {
    const float* s = src + h * head_dim * n_cols;
    float* d = dst + h * head_dim * n_cols;
    for (int64_t i = 0; i < half; ++i) {
      std::memcpy(d + i * n_cols, s + (2 * i) * n_cols, row_bytes);
      std::memcpy(d + (half + i) * n_cols, s + (2 * i + 1) * n_cols, row_bytes);
    }
  }
}

}  // namespace rlf

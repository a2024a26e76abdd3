#include "model/gguf.h"

#include <cmath>
#include <cstring>

#include "model/finite_weights.h"
#include "tokenizer/llama2c_tokenizer.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/write_target.h"

namespace rlf {

namespace fs = std::filesystem;

namespace {

enum : uint32_t { kU32 = 4, kI32 = 5, kF32 = 6, kBool = 7, kString = 8, kArray = 9 };
enum : uint32_t { kGgmlF32 = 0, kGgmlF16 = 1, kGgmlQ8_0 = 8 };
constexpr uint64_t kAlign = 32;

class Bytes {
 public:
  template <class T>
  void put(T v) {
    char b[sizeof(T)];
    std::memcpy(b, &v, sizeof(T));
    s_.append(b, sizeof(T));
  }
  void str(const std::string& v) {
    put<uint64_t>(v.size());
    s_ += v;
  }
  void raw(const void* p, size_t n) { s_.append(static_cast<const char*>(p), n); }
  std::string& data() { return s_; }

 private:
  std::string s_;
};

struct Metadata {
  Bytes b;
  uint64_t n = 0;
  void key(const std::string& k, uint32_t type) {
    b.str(k);
    b.put<uint32_t>(type);
    ++n;
  }
  void u32(const std::string& k, uint32_t v) { key(k, kU32), b.put<uint32_t>(v); }
  void f32(const std::string& k, float v) { key(k, kF32), b.put<float>(v); }
  void boolean(const std::string& k, bool v) { key(k, kBool), b.put<uint8_t>(v ? 1 : 0); }
  void str(const std::string& k, const std::string& v) { key(k, kString), b.str(v); }
  void strings(const std::string& k, const std::vector<std::string>& v) {
    key(k, kArray);
    b.put<uint32_t>(kString);
    b.put<uint64_t>(v.size());
    for (const auto& x : v) b.str(x);
  }
  template <class T>
  void numbers(const std::string& k, uint32_t type, const std::vector<T>& v) {
    key(k, kArray);
    b.put<uint32_t>(type);
    b.put<uint64_t>(v.size());
    for (T x : v) b.put<T>(x);
  }
};

struct Tensor {
  std::string name;
  torch::Tensor value;  // fp32 CPU, [rows, cols] or [n]
  uint32_t type = kGgmlF32;
};

// Hugging Face rotate-half rows -> interleaved pairs, per head: [h, 2, hd/2, D] -> [h, hd/2, 2, D].
torch::Tensor interleave_rope_rows(const torch::Tensor& w, int64_t heads) {
  const int64_t rows = w.size(0), cols = w.size(1);
  return w.reshape({heads, 2, rows / heads / 2, cols}).transpose(1, 2).reshape({rows, cols}).contiguous();
}

std::string encode_tensor(const Tensor& t) {
  std::string out;
  const torch::Tensor v = t.value.contiguous();
  if (t.type == kGgmlF32) {
    out.assign(reinterpret_cast<const char*>(v.data_ptr<float>()), static_cast<size_t>(v.numel()) * 4);
  } else if (t.type == kGgmlF16) {
    const torch::Tensor h = v.to(torch::kHalf).contiguous();
    check(h.isfinite().all().item<bool>(), "tensor '", t.name, "' has values beyond float16's range (|x| > 65504): ",
          "export it as f32 (--type f32)");
    out.assign(reinterpret_cast<const char*>(h.data_ptr<at::Half>()), static_cast<size_t>(h.numel()) * 2);
  } else {
    const float* x = v.data_ptr<float>();
    const int64_t blocks = v.numel() / 32;
    out.reserve(static_cast<size_t>(blocks) * 34);
    for (int64_t b = 0; b < blocks; ++b) {
      float amax = 0;
      for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[b * 32 + j]));
      const float d = amax / 127.0f, id = d != 0 ? 1.0f / d : 0.0f;
      const at::Half hd(d);
      out.append(reinterpret_cast<const char*>(&hd), 2);
      for (int j = 0; j < 32; ++j) out.push_back(static_cast<char>(static_cast<int8_t>(std::roundf(x[b * 32 + j] * id))));
    }
  }
  return out;
}

}  // namespace

GgufType parse_gguf_type(const std::string& name) {
  if (name == "f32") return GgufType::F32;
  if (name == "f16") return GgufType::F16;
  if (name == "q8_0") return GgufType::Q8_0;
  fail("GGUF type '", name, "' is not supported (use f32, f16 or q8_0)");
}

void export_gguf(CausalLMImpl& model, const Tokenizer& tokenizer, const fs::path& out, GgufType type,
                 const std::string& name) {
  with_context("exporting GGUF to '" + out.string() + "'", [&] {
    const ModelConfig& c = model.config();
    check(!c.is_classifier(), c.architecture, " is a classifier; GGUF export writes causal LMs");
    const Family& family = c.family();
    check(family.gguf_arch == "llama", c.architecture, " (llama.cpp's '", family.gguf_arch,
          "' architecture) is not exported to GGUF yet: rlf writes llama.cpp's llama architecture (Llama and Mistral "
          "models); save a Hugging Face directory (rlf convert) and use llama.cpp's convert_hf_to_gguf.py");
    check(c.sliding_window == 0, c.architecture, " with sliding_window = ", c.sliding_window,
          ": llama.cpp's llama architecture has no sliding window (not exported)");
    check(!c.attention_bias && !c.o_bias && !c.mlp_bias, c.architecture,
          " has projection biases, which llama.cpp's llama architecture does not read (not supported yet)");
    check(c.rope_scaling.type.empty(), "rope_scaling '", c.rope_scaling.type, "' is not exported yet");
    check(!has_lora(model), "the model has LoRA adapters: merge them first (rlf convert --merge-lora)");
    const auto* spm = dynamic_cast<const Llama2cTokenizer*>(&tokenizer);
    check(spm != nullptr, "the tokenizer '", tokenizer.name(),
          "' is not a SentencePiece (llama2.c tok*.bin) vocabulary; GGUF export of other tokenizers is not supported yet");
    check(tokenizer.vocab_size() == c.vocab_size, "the tokenizer has ", tokenizer.vocab_size(),
          " tokens but the model's vocabulary is ", c.vocab_size);
    check_finite_weights(model, "a GGUF file of this model");
    check_file_target(out);  // before the work: a device, a directory or a missing directory is refused

    // Tensors, in llama.cpp's names and layouts.
    torch::NoGradGuard ng;
    auto params = model.named_parameters();
    auto f32 = [&](const std::string& key) { return params[key].detach().to(torch::kCPU, torch::kFloat32).contiguous(); };
    auto matrix_type = [&](const torch::Tensor& w) {
      if (type == GgufType::F32) return static_cast<uint32_t>(kGgmlF32);
      if (type == GgufType::Q8_0 && w.size(1) % 32 == 0) return static_cast<uint32_t>(kGgmlQ8_0);
      return static_cast<uint32_t>(kGgmlF16);
    };
    std::vector<Tensor> tensors;
    auto add = [&](const std::string& n, torch::Tensor v, bool matrix) {
      const uint32_t t = matrix ? matrix_type(v) : static_cast<uint32_t>(kGgmlF32);
      tensors.push_back({n, std::move(v), t});
    };
    const int64_t H = c.num_attention_heads, K = c.num_key_value_heads;
    add("token_embd.weight", f32("model.embed_tokens.weight"), true);
    for (int64_t l = 0; l < c.num_hidden_layers; ++l) {
      const std::string hf = "model.layers." + std::to_string(l) + ".", g = "blk." + std::to_string(l) + ".";
      add(g + "attn_norm.weight", f32(hf + "input_layernorm.weight"), false);
      add(g + "attn_q.weight", interleave_rope_rows(f32(hf + "self_attn.q_proj.weight"), H), true);
      add(g + "attn_k.weight", interleave_rope_rows(f32(hf + "self_attn.k_proj.weight"), K), true);
      add(g + "attn_v.weight", f32(hf + "self_attn.v_proj.weight"), true);
      add(g + "attn_output.weight", f32(hf + "self_attn.o_proj.weight"), true);
      add(g + "ffn_norm.weight", f32(hf + "post_attention_layernorm.weight"), false);
      add(g + "ffn_gate.weight", f32(hf + "mlp.gate_proj.weight"), true);
      add(g + "ffn_up.weight", f32(hf + "mlp.up_proj.weight"), true);
      add(g + "ffn_down.weight", f32(hf + "mlp.down_proj.weight"), true);
    }
    add("output_norm.weight", f32("model.norm.weight"), false);
    if (!c.tie_word_embeddings) add("output.weight", f32("lm_head.weight"), true);

    // Metadata.
    Metadata m;
    m.str("general.architecture", "llama");
    m.str("general.name", name);
    m.u32("general.alignment", static_cast<uint32_t>(kAlign));
    m.u32("general.file_type", type == GgufType::F32 ? 0 : type == GgufType::F16 ? 1 : 7);
    m.u32("llama.context_length", static_cast<uint32_t>(c.max_position_embeddings));
    m.u32("llama.embedding_length", static_cast<uint32_t>(c.hidden_size));
    m.u32("llama.block_count", static_cast<uint32_t>(c.num_hidden_layers));
    m.u32("llama.feed_forward_length", static_cast<uint32_t>(c.intermediate_size));
    m.u32("llama.attention.head_count", static_cast<uint32_t>(H));
    m.u32("llama.attention.head_count_kv", static_cast<uint32_t>(K));
    m.u32("llama.rope.dimension_count", static_cast<uint32_t>(c.resolved_head_dim()));
    m.f32("llama.rope.freq_base", static_cast<float>(c.rope_theta));
    m.f32("llama.attention.layer_norm_rms_epsilon", static_cast<float>(c.rms_norm_eps));
    m.u32("llama.vocab_size", static_cast<uint32_t>(c.vocab_size));
    std::vector<std::string> pieces;
    std::vector<float> scores;
    std::vector<int32_t> kinds;
    for (int32_t id = 0; id < tokenizer.vocab_size(); ++id) {
      std::string p = tokenizer.token_string(id), piece;
      // llama2.c's export writes BOS/EOS as "\n<s>\n" / "\n</s>\n"; SentencePiece names them "<s>" / "</s>".
      if (tokenizer.is_special(id) && p.size() > 2 && p.front() == '\n' && p.back() == '\n') p = p.substr(1, p.size() - 2);
      for (char ch : p) piece += ch == ' ' ? std::string("\xE2\x96\x81") : std::string(1, ch);  // SentencePiece's space
      pieces.push_back(piece);
      scores.push_back(spm->score(id));
      const bool byte = p.size() == 6 && p.rfind("<0x", 0) == 0 && p.back() == '>';
      kinds.push_back(id == Llama2cTokenizer::kUnk ? 2 : tokenizer.is_special(id) ? 3 : byte ? 6 : 1);
    }
    m.str("tokenizer.ggml.model", "llama");
    m.strings("tokenizer.ggml.tokens", pieces);
    m.numbers<float>("tokenizer.ggml.scores", kF32, scores);
    m.numbers<int32_t>("tokenizer.ggml.token_type", kI32, kinds);
    m.u32("tokenizer.ggml.bos_token_id", static_cast<uint32_t>(*tokenizer.bos_id()));
    m.u32("tokenizer.ggml.eos_token_id", static_cast<uint32_t>(*tokenizer.eos_id()));
    m.u32("tokenizer.ggml.unknown_token_id", static_cast<uint32_t>(Llama2cTokenizer::kUnk));
    m.boolean("tokenizer.ggml.add_bos_token", true);
    m.boolean("tokenizer.ggml.add_eos_token", false);
    if (!tokenizer.chat_template().empty()) m.str("tokenizer.chat_template", tokenizer.chat_template());

    // Tensor infos and data.
    std::vector<std::string> blobs;
    Bytes infos;
    uint64_t offset = 0;
    for (const Tensor& t : tensors) {
      blobs.push_back(encode_tensor(t));
      infos.str(t.name);
      infos.put<uint32_t>(static_cast<uint32_t>(t.value.dim()));
      for (int64_t d = t.value.dim() - 1; d >= 0; --d) infos.put<uint64_t>(static_cast<uint64_t>(t.value.size(d)));
      infos.put<uint32_t>(t.type);
      infos.put<uint64_t>(offset);
      offset += (blobs.back().size() + kAlign - 1) / kAlign * kAlign;
    }
    Bytes file;
    file.raw("GGUF", 4);
    file.put<uint32_t>(3);
    file.put<uint64_t>(tensors.size());
    file.put<uint64_t>(m.n);
    file.data() += m.b.data();
    file.data() += infos.data();
    file.data().resize((file.data().size() + kAlign - 1) / kAlign * kAlign, '\0');
    for (const std::string& blob : blobs) {
      file.data() += blob;
      file.data().resize((file.data().size() + kAlign - 1) / kAlign * kAlign, '\0');
    }
    write_file_atomic(out, file.data());
  });
}

}  // namespace rlf

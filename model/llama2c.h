// llama2.c checkpoints (karpathy/llama2.c, export.py): read torch-free into a
// ModelConfig and Hugging Face-named TensorViews over a memory map.
//
// Versions read:
//   0 (legacy): 7 int32 {dim, hidden_dim, n_layers, n_heads, n_kv_heads,
//     vocab_size (negative: an unshared classifier follows), seq_len}, then fp32
//     weights in run.c's order, each stacked over layers: token_embedding
//     [V, D], rms_att [L, D], wq [L, D, D], wk [L, KVD, D], wv [L, KVD, D],
//     wo [L, D, D], rms_ffn [L, D], w1 [L, F, D], w2 [L, D, F], w3 [L, F, D],
//     rms_final [D], freq_cis_real [S, hs/2], freq_cis_imag [S, hs/2] (skipped),
//     then wcls [V, D] when not shared.
//   1: u32 magic 0x616b3432 ("ak42"), int32 version 1, the same 7 int32
//     (vocab_size positive), u8 shared_classifier, zero padding to 256 bytes;
//     then fp32 rms_att, rms_ffn, rms_final, token_embedding, wq, wk, wv, wo,
//     w1, w2, w3, [wcls]. No freq_cis.
//   2 (Q8_0) and later: rejected with an error saying so.
// The file size must match the header exactly. q_proj/k_proj rows are in
// llama2.c's interleaved RoPE order: their views carry interleaved_rope_heads,
// and permute_rope_rows() converts them to Hugging Face's rotate-half order.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>

#include "model/config.h"
#include "model/tensor_view.h"

namespace rlf {

class MappedFile;

// "ak42" read as a little-endian uint32: the first 4 bytes of version >= 1 files.
constexpr uint32_t kLlama2cMagic = 0x616b3432;

struct Llama2cHeader {
  int32_t version = 0;          // 0 (legacy, no magic) or 1
  int64_t dim = 0;              // D, model width
  int64_t hidden_dim = 0;       // F, SwiGLU width
  int64_t n_layers = 0;         // L
  int64_t n_heads = 0;          // H
  int64_t n_kv_heads = 0;       // KV heads (grouped-query attention when < H)
  int64_t vocab_size = 0;       // V (always positive here)
  int64_t seq_len = 0;          // S, max positions
  bool shared_classifier = true;  // lm_head tied to the embedding
  uint64_t weights_offset = 0;  // file offset of the first weight (28 or 256)
  uint64_t file_size = 0;       // exact size the header implies

  int64_t head_size() const { return dim / n_heads; }
};

// Parses and validates the header of a llama2.c checkpoint whose `file_size`
// bytes are at `data`, including that the file size matches. `source` names
// the file in errors. Safe on arbitrary input: throws only rlf::Error.
Llama2cHeader parse_llama2c_header(const uint8_t* data, size_t file_size, const std::string& source);

// The Hugging Face-style config of a llama2.c model: LlamaForCausalLM,
// rms_norm_eps 1e-5, rope_theta 10000, max_position_embeddings = seq_len,
// bos 1, eos 2, tie_word_embeddings = shared_classifier.
ModelConfig llama2c_config(const Llama2cHeader& header);

// A memory-mapped llama2.c checkpoint.
class Llama2cCheckpoint {
 public:
  // Maps and validates `path`; throws rlf::Error naming it.
  explicit Llama2cCheckpoint(const std::filesystem::path& path);

  const std::string& path() const { return path_; }
  const Llama2cHeader& header() const { return header_; }
  const ModelConfig& config() const { return config_; }

  // Every weight under its Hugging Face name (expected_tensors(config()) names
  // and shapes), F32, viewing the mapping. q_proj/k_proj views have
  // interleaved_rope_heads set (H and KV): permute them before use.
  const TensorMap& tensors() const { return tensors_; }

 private:
  std::string path_;
  std::shared_ptr<const MappedFile> map_;
  Llama2cHeader header_;
  ModelConfig config_;
  TensorMap tensors_;
};

// Reorders the rows of a [n_heads * head_dim, n_cols] row-major float matrix
// from llama2.c's interleaved RoPE order (rotated pairs are rows 2i, 2i+1 of a
// head) to Hugging Face's rotate-half order (pairs are rows i, i + head_dim/2):
//   dst[h, i]              = src[h, 2i]
//   dst[h, head_dim/2 + i] = src[h, 2i + 1]      for i < head_dim / 2.
// `src` and `dst` must not overlap. head_dim must be even.
void permute_rope_rows(const float* src, float* dst, int64_t n_heads, int64_t head_dim, int64_t n_cols);

}  // namespace rlf

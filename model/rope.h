// Rotary position embeddings (RoPE) in Hugging Face's rotate-half layout, on
// the first rotary_dim dimensions of each head (all of them but for Phi-3's
// partial_rotary_factor), with every scaling transformers implements
// (modeling_rope_utils.py): linear, dynamic (NTK), yarn, longrope, llama3.
//
// The cos/sin tables are computed in fp32 for positions [0, max_positions)
// and gathered per token. Two scalings depend on the forward itself, as in
// transformers, through the largest position p of the call (seq_len = p + 1):
//  - dynamic: beyond max_position_embeddings the base grows with seq_len
//    (tables recomputed for that call); transformers keeps the largest
//    seq_len seen until a call fits again, rlf computes each call from its
//    own (the same for one forward, and for decoding, whose calls grow);
//  - longrope: short_factor while seq_len <= original_max_position_embeddings,
//    long_factor beyond.
#pragma once

#include <torch/torch.h>

#include <memory>
#include <mutex>

#include "model/config.h"

namespace rlf {

// Inverse frequencies [rotary_dim / 2] (fp32) and the factor cos and sin are
// multiplied by, as transformers computes them for a forward whose longest
// sequence is `seq_len`.
struct RopeFrequencies {
  torch::Tensor inv_freq;
  double attention_factor = 1.0;
};
RopeFrequencies rope_frequencies(const RopeSpec& spec, int64_t rotary_dim, int64_t max_position_embeddings,
                                 int64_t seq_len);

class RotaryEmbedding {
 public:
  // cos and sin [rows, rotary_dim] fp32 on the model's device.
  struct Tables {
    torch::Tensor cos, sin;
  };

  RotaryEmbedding() = default;
  RotaryEmbedding(const RopeSpec& spec, int64_t rotary_dim, int64_t max_position_embeddings, torch::Device device);

  // The tables for a forward whose largest position is `max_pos` (< max_positions()).
  Tables tables(int64_t max_pos) const;

  // cos and sin for `positions` [B, T] (int64) from `t`, each [B, T, rotary_dim] in `dtype`.
  static std::pair<torch::Tensor, torch::Tensor> lookup(const Tables& t, const torch::Tensor& positions,
                                                        torch::ScalarType dtype);

  // Rotates the first cos.size(-1) dimensions of x [B, T, heads, head_dim]
  // given cos/sin [B, T, rotary_dim]; the rest pass through.
  static torch::Tensor apply(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin);

  // Positions a forward may use: max_position_embeddings (dynamic: times its factor).
  int64_t max_positions() const { return max_positions_; }
  int64_t rotary_dim() const { return rotary_dim_; }

 private:
  Tables make_tables(int64_t seq_len, int64_t rows) const;

  RopeSpec spec_;
  int64_t rotary_dim_ = 0;
  int64_t max_position_embeddings_ = 0;
  int64_t max_positions_ = 0;
  torch::Device device_ = torch::kCPU;
  Tables base_;                  // every static scaling; dynamic and longrope below the switch
  Tables long_;                  // longrope past original_max_position_embeddings
  struct Dynamic {               // dynamic: the last call's tables past max_position_embeddings
    std::mutex mutex;
    int64_t seq_len = 0;
    std::shared_ptr<Tables> tables;
  };
  std::shared_ptr<Dynamic> dynamic_ = std::make_shared<Dynamic>();
};

}  // namespace rlf

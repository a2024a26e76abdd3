// Rotary position embeddings (RoPE) in Hugging Face's rotate-half layout, with
// optional Llama-3 frequency scaling. The cos/sin tables are computed once in
// fp32 for positions [0, max_positions) and gathered per token.
#pragma once

#include <torch/torch.h>

#include "model/config.h"

namespace rlf {

// Inverse frequencies [head_dim / 2] (fp32), llama3-scaled when configured.
torch::Tensor rope_inverse_frequencies(const ModelConfig& config);

class RotaryEmbedding {
 public:
  RotaryEmbedding() = default;
  RotaryEmbedding(const ModelConfig& config, int64_t max_positions, torch::Device device);

  // cos and sin for `positions` [B, T] (int64), each [B, T, head_dim] in `dtype`.
  std::pair<torch::Tensor, torch::Tensor> lookup(const torch::Tensor& positions, torch::ScalarType dtype) const;

  // Applies the rotation to x [B, T, heads, head_dim] given cos/sin [B, T, head_dim].
  static torch::Tensor apply(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin);

  int64_t max_positions() const { return max_positions_; }
  // The tables [max_positions, head_dim] fp32 on the model's device.
  const torch::Tensor& cos_table() const { return cos_; }
  const torch::Tensor& sin_table() const { return sin_; }

 private:
  int64_t max_positions_ = 0;
  torch::Tensor cos_;  // [max_positions, head_dim] fp32
  torch::Tensor sin_;  // [max_positions, head_dim] fp32
};

}  // namespace rlf

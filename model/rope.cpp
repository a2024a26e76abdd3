#include "model/rope.h"

#include <cmath>

#include "util/error.h"

namespace rlf {

torch::Tensor rope_inverse_frequencies(const ModelConfig& config) {
  const int64_t hd = config.resolved_head_dim();
  auto idx = torch::arange(0, hd, 2, torch::kInt64).to(torch::kFloat32);
  auto inv = 1.0 / torch::pow(torch::tensor(config.rope_theta, torch::kFloat32), idx / static_cast<double>(hd));
  if (config.rope_scaling.type != "llama3") return inv;
  // Llama 3.1 scaling: long wavelengths are divided by `factor`, short ones kept,
  // the band between smoothly interpolated (as in transformers' _compute_llama3_parameters).
  const auto& rs = config.rope_scaling;
  const double low_wavelen = rs.original_max_position_embeddings / rs.low_freq_factor;
  const double high_wavelen = rs.original_max_position_embeddings / rs.high_freq_factor;
  auto wavelen = 2 * M_PI / inv;
  auto scaled = torch::where(wavelen > low_wavelen, inv / rs.factor, inv);
  auto smooth = (rs.original_max_position_embeddings / wavelen - rs.low_freq_factor) /
                (rs.high_freq_factor - rs.low_freq_factor);
  auto smoothed = (1 - smooth) * scaled / rs.factor + smooth * scaled;
  auto is_medium = (wavelen >= high_wavelen) & (wavelen <= low_wavelen);
  return torch::where(is_medium, smoothed, scaled);
}

RotaryEmbedding::RotaryEmbedding(const ModelConfig& config, int64_t max_positions, torch::Device device)
    : max_positions_(max_positions) {
  auto inv = rope_inverse_frequencies(config);                         // [hd/2]
  auto pos = torch::arange(max_positions, torch::kInt64).to(torch::kFloat32);  // [P]
  auto freqs = torch::outer(pos, inv);                                 // [P, hd/2]
  auto emb = torch::cat({freqs, freqs}, -1);                           // [P, hd]
  cos_ = emb.cos().to(device);
  sin_ = emb.sin().to(device);
}

std::pair<torch::Tensor, torch::Tensor> RotaryEmbedding::lookup(const torch::Tensor& positions,
                                                                torch::ScalarType dtype) const {
  check(cos_.defined(), "RotaryEmbedding used before initialisation");
  auto flat = positions.reshape({-1});
  auto cos = cos_.index_select(0, flat).view({positions.size(0), positions.size(1), -1});
  auto sin = sin_.index_select(0, flat).view({positions.size(0), positions.size(1), -1});
  return {cos.to(dtype), sin.to(dtype)};
}

torch::Tensor RotaryEmbedding::apply(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin) {
  // x: [B, T, H, hd]; cos/sin: [B, T, hd] -> broadcast over heads.
  const int64_t half = x.size(-1) / 2;
  auto x1 = x.narrow(-1, 0, half);
  auto x2 = x.narrow(-1, half, half);
  auto rotated = torch::cat({-x2, x1}, -1);
  auto c = cos.unsqueeze(2), s = sin.unsqueeze(2);
  return x * c + rotated * s;
}

}  // namespace rlf

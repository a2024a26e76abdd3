#include "model/rope.h"

#include <cmath>

#include "util/error.h"

namespace rlf {

namespace {

// base^(-2i/dim) for i < dim/2, in fp32 as transformers computes it.
torch::Tensor default_inv_freq(double base, int64_t dim) {
  auto idx = torch::arange(0, dim, 2, torch::kInt64).to(torch::kFloat32);
  return 1.0 / torch::pow(torch::tensor(base, torch::kFloat32), idx / static_cast<double>(dim));
}

// Llama 3.1: long wavelengths divided by `factor`, short ones kept, the band
// between smoothly interpolated (_compute_llama3_parameters).
torch::Tensor llama3_inv_freq(const RopeSpec& spec, int64_t dim) {
  const RopeScaling& rs = spec.scaling;
  auto inv = default_inv_freq(spec.theta, dim);
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

// NTK-aware dynamic scaling (_compute_dynamic_ntk_parameters): for seq_len
// past max_position_embeddings the base grows to
// base · (factor·seq_len/max − (factor − 1))^(dim/(dim − 2)), in fp32 as there.
torch::Tensor dynamic_inv_freq(const RopeSpec& spec, int64_t dim, int64_t max_pos_emb, int64_t seq_len) {
  const float factor = static_cast<float>(spec.scaling.factor);
  const float seq = static_cast<float>(std::max(seq_len, max_pos_emb));
  float b = factor * seq / static_cast<float>(max_pos_emb) - static_cast<float>(spec.scaling.factor - 1);
  b = std::pow(b, static_cast<float>(static_cast<double>(dim) / static_cast<double>(dim - 2)));
  const float base = static_cast<float>(spec.theta) * b;
  auto idx = torch::arange(0, dim, 2, torch::kInt64).to(torch::kFloat32);
  return 1.0 / torch::pow(torch::tensor(base, torch::kFloat32), idx / static_cast<double>(dim));
}

// YaRN (_compute_yarn_parameters): interpolated (÷ factor) low frequencies,
// extrapolated high ones, a linear ramp between the dimensions that turn
// beta_slow and beta_fast times over the original context.
RopeFrequencies yarn(const RopeSpec& spec, int64_t dim, int64_t max_pos_emb) {
  const RopeScaling& rs = spec.scaling;
  const double base = spec.theta;
  const double orig = static_cast<double>(rs.original_max_position_embeddings);
  const double factor = rs.factor > 0 ? rs.factor : static_cast<double>(max_pos_emb) / orig;
  auto mscale = [](double scale, double m) { return scale <= 1 ? 1.0 : 0.1 * m * std::log(scale) + 1.0; };
  double attention = 0;
  if (rs.attention_factor) attention = *rs.attention_factor;
  else if (rs.mscale && rs.mscale_all_dim && *rs.mscale != 0 && *rs.mscale_all_dim != 0)
    attention = mscale(factor, *rs.mscale) / mscale(factor, *rs.mscale_all_dim);
  else attention = mscale(factor, 1.0);
  auto correction_dim = [&](double rotations) {
    return (static_cast<double>(dim) * std::log(orig / (rotations * 2 * M_PI))) / (2 * std::log(base));
  };
  double low = correction_dim(rs.beta_fast), high = correction_dim(rs.beta_slow);
  if (rs.truncate) low = std::floor(low), high = std::ceil(high);
  low = std::max(low, 0.0);
  high = std::min(high, static_cast<double>(dim - 1));
  if (low == high) high += 0.001;  // as transformers: no division by zero
  auto pos_freqs = torch::pow(torch::tensor(base, torch::kFloat32),
                              torch::arange(0, dim, 2, torch::kInt64).to(torch::kFloat32) / static_cast<double>(dim));
  auto extrapolation = 1.0 / pos_freqs;
  auto interpolation = 1.0 / (factor * pos_freqs);
  auto ramp = ((torch::arange(dim / 2, torch::kFloat32) - low) / (high - low)).clamp(0, 1);
  auto extra = 1 - ramp;
  return {interpolation * (1 - extra) + extrapolation * extra, attention};
}

// LongRoPE (_compute_longrope_parameters): per-frequency divisors, short or long.
RopeFrequencies longrope(const RopeSpec& spec, int64_t dim, int64_t max_pos_emb, bool long_factors) {
  const RopeScaling& rs = spec.scaling;
  const double orig = static_cast<double>(rs.original_max_position_embeddings);
  const double factor = rs.factor > 0 ? rs.factor : static_cast<double>(max_pos_emb) / orig;
  double attention = 1.0;
  if (rs.attention_factor) attention = *rs.attention_factor;
  else if (factor > 1.0) attention = std::sqrt(1 + std::log(factor) / std::log(orig));
  const std::vector<double>& f = long_factors ? rs.long_factor : rs.short_factor;
  auto ext = torch::tensor(std::vector<float>(f.begin(), f.end()), torch::kFloat32);
  auto shape = torch::arange(0, dim, 2, torch::kInt64).to(torch::kFloat32) / static_cast<double>(dim);
  return {1.0 / (ext * torch::pow(torch::tensor(spec.theta, torch::kFloat32), shape)), attention};
}

bool longrope_long(const RopeSpec& spec, int64_t seq_len) {
  return seq_len > spec.scaling.original_max_position_embeddings;
}

}  // namespace

RopeFrequencies rope_frequencies(const RopeSpec& spec, int64_t rotary_dim, int64_t max_position_embeddings,
                                 int64_t seq_len) {
  const std::string& type = spec.scaling.type;
  const int64_t dim = rotary_dim;
  if (type.empty()) return {default_inv_freq(spec.theta, dim), 1.0};
  if (type == "linear") return {default_inv_freq(spec.theta, dim) / spec.scaling.factor, 1.0};
  if (type == "dynamic") return {dynamic_inv_freq(spec, dim, max_position_embeddings, seq_len), 1.0};
  if (type == "yarn") return yarn(spec, dim, max_position_embeddings);
  if (type == "longrope") return longrope(spec, dim, max_position_embeddings, longrope_long(spec, seq_len));
  if (type == "llama3") return {llama3_inv_freq(spec, dim), 1.0};
  fail("rope type '", type, "' is not supported");
}

RotaryEmbedding::RotaryEmbedding(const RopeSpec& spec, int64_t rotary_dim, int64_t max_position_embeddings,
                                 torch::Device device)
    : spec_(spec), rotary_dim_(rotary_dim), max_position_embeddings_(max_position_embeddings), device_(device) {
  max_positions_ = max_position_embeddings;
  if (spec.scaling.type == "dynamic")
    max_positions_ = static_cast<int64_t>(std::ceil(max_position_embeddings * std::max(1.0, spec.scaling.factor)));
  // Below the switch: the tables of seq_len <= max_position_embeddings (dynamic) or of the short factors.
  const int64_t short_len = spec.scaling.type == "longrope"
                                ? std::min(spec.scaling.original_max_position_embeddings, max_position_embeddings)
                                : max_position_embeddings;
  base_ = make_tables(short_len, max_positions_);
  if (spec.scaling.type == "longrope") long_ = make_tables(spec.scaling.original_max_position_embeddings + 1, max_positions_);
}

RotaryEmbedding::Tables RotaryEmbedding::make_tables(int64_t seq_len, int64_t rows) const {
  const RopeFrequencies f = rope_frequencies(spec_, rotary_dim_, max_position_embeddings_, seq_len);
  auto pos = torch::arange(rows, torch::kInt64).to(torch::kFloat32);  // [P]
  auto freqs = torch::outer(pos, f.inv_freq);                           // [P, rd/2]
  auto emb = torch::cat({freqs, freqs}, -1);                            // [P, rd]
  return {(emb.cos() * f.attention_factor).to(device_), (emb.sin() * f.attention_factor).to(device_)};
}

RotaryEmbedding::Tables RotaryEmbedding::tables(int64_t max_pos) const {
  check(base_.cos.defined(), "RotaryEmbedding used before initialisation");
  const int64_t seq_len = max_pos + 1;
  if (spec_.scaling.type == "longrope") return longrope_long(spec_, seq_len) ? long_ : base_;
  if (spec_.scaling.type != "dynamic" || seq_len <= max_position_embeddings_) return base_;
  std::lock_guard<std::mutex> lock(dynamic_->mutex);
  if (dynamic_->seq_len != seq_len) {
    dynamic_->tables = std::make_shared<Tables>(make_tables(seq_len, seq_len));
    dynamic_->seq_len = seq_len;
  }
  return *dynamic_->tables;
}

std::pair<torch::Tensor, torch::Tensor> RotaryEmbedding::lookup(const Tables& t, const torch::Tensor& positions,
                                                                torch::ScalarType dtype) {
  auto flat = positions.reshape({-1});
  auto cos = t.cos.index_select(0, flat).view({positions.size(0), positions.size(1), -1});
  auto sin = t.sin.index_select(0, flat).view({positions.size(0), positions.size(1), -1});
  return {cos.to(dtype), sin.to(dtype)};
}

torch::Tensor RotaryEmbedding::apply(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin) {
  // x: [B, T, H, hd]; cos/sin: [B, T, rd] -> broadcast over heads.
  const int64_t rd = cos.size(-1), hd = x.size(-1);
  const torch::Tensor xr = rd == hd ? x : x.narrow(-1, 0, rd);
  const int64_t half = rd / 2;
  auto x1 = xr.narrow(-1, 0, half);
  auto x2 = xr.narrow(-1, half, half);
  auto rotated = torch::cat({-x2, x1}, -1);
  auto c = cos.unsqueeze(2), s = sin.unsqueeze(2);
  auto out = xr * c + rotated * s;
  return rd == hd ? out : torch::cat({out, x.narrow(-1, rd, hd - rd)}, -1);
}

}  // namespace rlf

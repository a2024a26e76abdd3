// PPO's clipped value loss; see value_loss.h.
#include "algorithms/value_loss.h"

#include <cmath>

#include <torch/torch.h>

#include "util/error.h"

namespace rlf::algo {

ValueLoss clipped_value_loss(const torch::Tensor& values, const torch::Tensor& old_values,
                             const torch::Tensor& returns, const torch::Tensor& mask, double clip) {
  check(std::isfinite(clip) && clip >= 0, "value loss: clip must be >= 0 (got ", clip, "; 0 = no clipping)");
  check(values.sizes() == old_values.sizes() && values.sizes() == returns.sizes() && values.sizes() == mask.sizes(),
        "value loss: values, old values, returns and mask must have one shape");
  const auto on = mask != 0;
  // Padding may hold anything: read only selected entries, so 0 there has zero gradient.
  const auto v = torch::where(on, values, torch::zeros_like(values));
  const auto old = torch::where(on, old_values.to(values.dtype()), torch::zeros_like(values));
  const auto ret = torch::where(on, returns.to(values.dtype()), torch::zeros_like(values));
  const auto plain = (v - ret).pow(2);
  ValueLoss out;
  if (clip == 0) {
    out.loss = 0.5 * plain;
    out.clipped = torch::zeros_like(values);
    return out;
  }
  const auto v_clip = old + (v - old).clamp(-clip, clip);
  const auto clipped = (v_clip - ret).pow(2);
  out.loss = 0.5 * torch::max(plain, clipped);
  // Where the clip does not bind, v_clip is v but for the last bit of old + (v - old): counted only
  // where it binds, so the count does not depend on that rounding.
  out.clipped = ((clipped > plain) & ((v - old).abs() > clip) & on).to(values.dtype()).detach();
  return out;
}

}  // namespace rlf::algo

// Negative-aware fine-tuning; see nft_loss.h and docs/algorithms.md.
#include "algorithms/nft_loss.h"

#include <cmath>

#include "algorithms/checks.h"
#include "util/error.h"

namespace rlf::algo {

namespace {
constexpr double kRateMin = 0.02, kRateMax = 0.98;  // the reference's clamp of r_q
constexpr double kNftMaxLogRatio = 10.0;               // the reference clamps log r_t at 10
}  // namespace

void NftOptions::validate() const {
  check(std::isfinite(neg_weight) && neg_weight >= 0, "algorithm.nft_neg_weight must be >= 0, got ", neg_weight,
        " (1 = NFT, 0 = fine-tuning on the correct samples alone)");
  check(std::isfinite(clamp_negative) && clamp_negative > 0, "algorithm.nft_clamp_negative must be > 0, got ",
        clamp_negative, " (the reference uses 1.0)");
}

torch::Tensor nft_rows(const torch::Tensor& rate) {
  torch::NoGradGuard no_grad;
  return ((rate > 0) & (rate < 1)).to(torch::kFloat32);  // NaN compares false
}

NftResult nft_loss(const torch::Tensor& logp, const torch::Tensor& old_logp, const torch::Tensor& correct,
                   const torch::Tensor& rate, const torch::Tensor& mask, const NftOptions& options) {
  options.validate();
  constexpr std::string_view fn = "nft_loss";
  detail::check_bt(logp, fn, "logp");
  detail::check_float_like(old_logp, logp, fn, "old_logp", "logp");
  check(mask.defined() && mask.sizes() == logp.sizes(), fn, ": mask must have the shape of logp ", logp.sizes());
  const int64_t B = logp.size(0);
  check(correct.defined() && correct.dim() == 1 && correct.size(0) == B, fn, ": correct must be [B] with B = ", B);
  check(rate.defined() && rate.dim() == 1 && rate.size(0) == B, fn, ": rate must be [B] with B = ", B);

  const auto dt = logp.scalar_type();
  const auto zero = torch::zeros({}, logp.options());
  const auto row_on = nft_rows(rate).to(logp.device()).unsqueeze(1) != 0;  // [B, 1]
  const auto on = (mask != 0) & row_on;                                     // [B, T]
  const auto rq = torch::nan_to_num(rate.detach().to(logp.device(), dt), 0.5).clamp(kRateMin, kRateMax).unsqueeze(1);
  const auto pos = (correct.detach().to(logp.device()) > 0.5).unsqueeze(1);  // [B, 1]
  const auto old = old_logp.detach().to(dt);
  const auto log_r = torch::where(on, logp - old, zero).clamp_max(kNftMaxLogRatio);  // [B, T]
  const auto r = log_r.exp();
  const auto positive = -log_r;
  const auto proxy = (1 - rq * r) / (1 - rq);
  const auto floor = proxy.detach().clamp_min(options.clamp_negative);
  const auto proxy_st = proxy + (floor - proxy.detach());  // value max(proxy, eps), gradient of proxy
  const auto negative = -torch::log(proxy_st) * options.neg_weight;
  const auto loss = (1 - rq) * torch::where(pos, positive, negative);

  NftResult result;
  result.per_token = torch::where(on, loss, zero);
  torch::NoGradGuard no_grad;
  result.stats.n_tokens = on.sum().item<double>();
  if (result.stats.n_tokens > 0) {
    result.stats.clamped_frac =
        (on & ~pos & (proxy.detach() < options.clamp_negative)).sum().item<double>() / result.stats.n_tokens;
    result.stats.ratio_mean = torch::where(on, r.detach(), zero).sum().item<double>() / result.stats.n_tokens;
  }
  return result;
}

}  // namespace rlf::algo

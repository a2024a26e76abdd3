// Clipped policy-gradient surrogate; see policy_loss.h and docs/algorithms.md.
#include "algorithms/policy_loss.h"

#include <cmath>

#include "algorithms/checks.h"
#include "algorithms/names.h"
#include "util/error.h"

namespace rlf::algo {
namespace {

constexpr detail::NameTable<RatioLevel, 2> kRatioLevelNames{{
    {RatioLevel::Token, "token"},
    {RatioLevel::Sequence, "sequence"},
}};

// Log-ratios are clamped to [-kMaxLogRatio, kMaxLogRatio] before exp() so a
// wildly off-policy token cannot overflow (as verl does); the clamp only
// acts where the clipped surrogate already gives (almost) no gradient.
constexpr double kMaxLogRatio = 20.0;

PolicyLossStats stats_of(const torch::Tensor& on, const torch::Tensor& ratio, const torch::Tensor& log_ratio,
                         const torch::Tensor& adv, const PolicyLossOptions& o) {
  torch::NoGradGuard no_grad;
  PolicyLossStats s;
  s.n_tokens = on.sum().item<double>();
  if (s.n_tokens == 0) return s;
  const auto r = ratio.detach().masked_select(on).to(torch::kFloat64);  // [N]
  const auto lr = log_ratio.detach().masked_select(on).to(torch::kFloat64);
  const auto a = adv.masked_select(on);
  const auto frac = [&](const torch::Tensor& hit) { return hit.sum().item<double>() / s.n_tokens; };
  s.clip_frac_low = frac((r < 1.0 - o.eps_low) & (a < 0));
  s.clip_frac_high = frac((r > 1.0 + o.eps_high) & (a > 0));
  if (o.dual_clip > 0) s.clip_frac_dual = frac((r > o.dual_clip) & (a < 0));
  s.ratio_mean = r.mean().item<double>();
  s.ratio_max = r.max().item<double>();
  s.approx_kl = (torch::expm1(lr) - lr).mean().item<double>();
  return s;
}

}  // namespace

RatioLevel parse_ratio_level(std::string_view name) {
  return detail::parse_name(kRatioLevelNames, "ratio level", name);
}

std::string_view ratio_level_name(RatioLevel level) { return detail::name_of(kRatioLevelNames, level); }

void PolicyLossOptions::validate() const {
  check(std::isfinite(eps_low) && eps_low >= 0.0 && eps_low < 1.0,
        "algorithm.eps_low must be in [0, 1), got ", eps_low, " (PPO/GRPO use 0.2)");
  check(std::isfinite(eps_high) && eps_high >= 0.0, "algorithm.eps_high must be >= 0, got ", eps_high,
        " (PPO/GRPO use 0.2, DAPO clip-higher 0.28)");
  check(dual_clip == 0.0 || (std::isfinite(dual_clip) && dual_clip > 1.0),
        "algorithm.dual_clip must be 0 (off) or > 1, got ", dual_clip, " (verl uses 3)");
  check(std::isfinite(ratio_cap) && ratio_cap >= 0.0, "algorithm.off_policy_ratio_cap must be >= 0 (0 = off), got ",
        ratio_cap);
  check(std::isfinite(mask_low) && mask_low >= 0.0 && mask_low < 1.0,
        "algorithm.off_policy_mask_low must be in [0, 1) (0 = off), got ", mask_low);
  check(std::isfinite(mask_high) && (mask_high == 0.0 || mask_high > 1.0),
        "algorithm.off_policy_mask_high must be 0 (off) or > 1, got ", mask_high);
}

PolicyLossResult policy_loss(const torch::Tensor& logp, const torch::Tensor& old_logp,
                             const torch::Tensor& advantages, const torch::Tensor& mask,
                             const PolicyLossOptions& options, const torch::Tensor& guard_in) {
  options.validate();
  constexpr std::string_view fn = "policy_loss";
  detail::check_bt(logp, fn, "logp");
  detail::check_float_like(logp, logp, fn, "logp", "logp");
  detail::check_float_like(old_logp, logp, fn, "old_logp", "logp");
  detail::check_bt(mask, fn, "mask");
  check(mask.sizes() == logp.sizes(), fn, ": mask has shape ", mask.sizes(), " but logp has ", logp.sizes(),
        "; they must match");
  check(advantages.defined(), fn, ": advantages is an undefined tensor");
  torch::Tensor adv = advantages;
  if (adv.dim() == 1) {
    check(adv.size(0) == logp.size(0), fn, ": advantages [B] has ", adv.size(0), " entries but logp has B = ",
          logp.size(0));
    adv = adv.unsqueeze(1).expand_as(logp);
  }
  detail::check_float_like(adv, logp, fn, "advantages", "logp");

  const auto on = mask != 0;                              // [B, T] loss tokens
  const auto zero = torch::zeros({}, logp.options());     // scalar 0 for torch::where
  const auto old = old_logp.detach().to(logp.scalar_type());
  adv = torch::where(on, adv.detach().to(logp.scalar_type()), zero);  // [B, T]
  // where(), not a product with the mask: garbage (inf/NaN) under mask == 0
  // must give exactly zero gradient, and 0 * inf would be NaN.
  const auto log_ratio = torch::where(on, logp - old, zero);  // [B, T] log(pi_theta / pi_old)

  torch::Tensor log_r;  // [B, T] log of the importance ratio each token's loss uses
  if (options.ratio_level == RatioLevel::Token) {
    log_r = log_ratio;
  } else {
    // GSPO-token: s_{i,t} = sg[s_i] * pi(y_t) / sg[pi(y_t)], whose value is the
    // sequence ratio s_i and whose gradient is s_i * grad log pi(y_t).
    const auto n_tokens = on.sum(1).clamp_min(1).to(logp.scalar_type());      // [B]
    const auto log_s = (log_ratio.sum(1) / n_tokens).detach();                // [B] log s_i
    const auto lp = torch::where(on, logp, zero);                             // [B, T]
    log_r = lp - lp.detach() + log_s.unsqueeze(1);
  }
  auto ratio = torch::exp(log_r.clamp(-kMaxLogRatio, kMaxLogRatio));  // [B, T]

  // Off-policy safeguards on guarded tokens.
  const bool guarded = guard_in.defined() && (options.ratio_cap > 0 || options.mask_low > 0 || options.mask_high > 0);
  torch::Tensor guard, capped, masked;  // [B, T] bool
  if (guarded) {
    check(guard_in.sizes() == logp.sizes(), fn, ": guard has shape ", guard_in.sizes(), " but logp has ", logp.sizes());
    guard = (guard_in != 0) & on;
    const auto r = ratio.detach();
    if (options.ratio_cap > 0) {
      capped = guard & (r > options.ratio_cap);
      ratio = torch::where(capped, torch::full({}, options.ratio_cap, ratio.options()), ratio);
    }
    auto out = torch::zeros_like(guard);
    if (options.mask_low > 0) out = out | (r < options.mask_low);
    if (options.mask_high > 0) out = out | (r > options.mask_high);
    masked = guard & out;
  }

  const auto loss_unclipped = -adv * ratio;
  const auto loss_clipped = -adv * ratio.clamp(1.0 - options.eps_low, 1.0 + options.eps_high);
  auto loss = torch::maximum(loss_unclipped, loss_clipped);  // -min(r A, clip(r) A)
  if (options.dual_clip > 0) {
    loss = torch::where(adv < 0, torch::minimum(loss, -adv * options.dual_clip), loss);
  }

  PolicyLossResult result;
  result.per_token = torch::where(on, loss, zero);
  if (masked.defined()) result.per_token = torch::where(masked, zero, result.per_token);
  result.stats = stats_of(on, ratio, log_ratio, adv, options);
  if (guarded && result.stats.n_tokens > 0) {
    torch::NoGradGuard no_grad;
    if (capped.defined()) result.stats.capped_frac = capped.sum().item<double>() / result.stats.n_tokens;
    result.stats.masked_frac = masked.sum().item<double>() / result.stats.n_tokens;
  }
  return result;
}

}  // namespace rlf::algo

// Clipped policy-gradient surrogate; see policy_loss.h and docs/algorithms.md.
#include "algorithms/policy_loss.h"

#include <cmath>
#include <cstring>

#include <ATen/CPUGeneratorImpl.h>

#include "algorithms/checks.h"
#include "algorithms/names.h"
#include "util/error.h"

namespace rlf::algo {
namespace {

constexpr detail::NameTable<RatioLevel, 2> kRatioLevelNames{{
    {RatioLevel::Token, "token"},
    {RatioLevel::Sequence, "sequence"},
}};

constexpr detail::NameTable<PolicyObjective, 6> kObjectiveNames{{
    {PolicyObjective::Clip, "clip"},
    {PolicyObjective::Cispo, "cispo"},
    {PolicyObjective::DppoTv, "dppo_tv"},
    {PolicyObjective::DppoKl, "dppo_kl"},
    {PolicyObjective::ClipCov, "clip_cov"},
    {PolicyObjective::KlCov, "kl_cov"},
}};

// Covariance of each loss token's advantage and (detached) log-prob with
// those of the other loss tokens: (A - mean A)(logp - mean logp), means over
// `on`; 0 elsewhere. [B, T] float64, no gradient.
torch::Tensor token_covariance(const torch::Tensor& logp, const torch::Tensor& adv, const torch::Tensor& on) {
  torch::NoGradGuard no_grad;
  const auto zero = torch::zeros({}, torch::TensorOptions().dtype(torch::kFloat64).device(logp.device()));
  const auto lp = torch::where(on, logp.detach().to(torch::kFloat64), zero);
  const auto a = torch::where(on, adv.to(torch::kFloat64), zero);
  const auto n = on.sum().clamp_min(1).to(torch::kFloat64);
  return torch::where(on, (a - a.sum() / n) * (lp - lp.sum() / n), zero);
}

// Seed of clip_cov's choice: FNV-1a over the bit patterns of the loss tokens'
// old log-probs (the call's fixed data) and their positions.
uint64_t choice_seed(const torch::Tensor& old_logp, const torch::Tensor& on) {
  const auto idx = on.flatten().nonzero().flatten().to(torch::kCPU).contiguous();
  const auto v = old_logp.detach().flatten().to(torch::kCPU, torch::kFloat32).contiguous();
  const int64_t* ip = idx.data_ptr<int64_t>();
  const float* vp = v.data_ptr<float>();
  uint64_t h = 1469598103934665603ull;
  const auto mix = [&h](uint64_t x) {
    for (int b = 0; b < 8; ++b) h = (h ^ ((x >> (8 * b)) & 0xff)) * 1099511628211ull;
  };
  for (int64_t k = 0; k < idx.numel(); ++k) {
    uint32_t bits = 0;
    std::memcpy(&bits, &vp[ip[k]], sizeof bits);
    mix(static_cast<uint64_t>(ip[k]));
    mix(bits);
  }
  return h;
}

// At least one, at most n: floor(fraction * n_tokens) tokens.
int64_t share_of(double fraction, double n_tokens, int64_t n) {
  return std::min<int64_t>(n, std::max<int64_t>(1, static_cast<int64_t>(std::floor(fraction * n_tokens))));
}

// clip_cov: bool [B, T], true on the tokens chosen to be detached among `eligible`.
torch::Tensor choose_clip_cov(const torch::Tensor& eligible, const torch::Tensor& on, const torch::Tensor& old_logp,
                              double fraction) {
  torch::NoGradGuard no_grad;
  auto chosen = torch::zeros({eligible.numel()}, eligible.options().device(torch::kCPU));
  const auto cand = eligible.flatten().nonzero().flatten().to(torch::kCPU);
  if (cand.numel() > 0) {
    const int64_t k = share_of(fraction, on.sum().item<double>(), cand.numel());
    auto gen = at::make_generator<at::CPUGeneratorImpl>(choice_seed(old_logp, on));
    const auto perm = torch::randperm(cand.numel(), gen, torch::TensorOptions().dtype(torch::kInt64));
    chosen.index_put_({cand.index({perm.slice(0, 0, k)})}, true);
  }
  return chosen.view(eligible.sizes()).to(eligible.device());
}

// kl_cov: bool [B, T], true on the share of loss tokens with the largest covariance.
torch::Tensor choose_kl_cov(const torch::Tensor& cov, const torch::Tensor& on, double fraction) {
  torch::NoGradGuard no_grad;
  auto chosen = torch::zeros({on.numel()}, on.options().device(torch::kCPU));
  const auto idx = on.flatten().nonzero().flatten().to(torch::kCPU);
  if (idx.numel() > 0) {
    const int64_t k = share_of(fraction, static_cast<double>(idx.numel()), idx.numel());
    const auto c = cov.flatten().to(torch::kCPU).index({idx});
    const auto top = std::get<1>(c.topk(k));
    chosen.index_put_({idx.index({top})}, true);
  }
  return chosen.view(on.sizes()).to(on.device());
}

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

std::vector<std::string> ratio_level_names() { return detail::names_list(kRatioLevelNames); }

std::string_view ratio_level_name(RatioLevel level) { return detail::name_of(kRatioLevelNames, level); }

PolicyObjective parse_policy_objective(std::string_view name) {
  return detail::parse_name(kObjectiveNames, "policy loss (algorithm.policy_loss)", name);
}

std::vector<std::string> policy_objective_names() { return detail::names_list(kObjectiveNames); }

std::string_view policy_objective_name(PolicyObjective objective) {
  return detail::name_of(kObjectiveNames, objective);
}

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
  const bool token_only = objective == PolicyObjective::DppoTv || objective == PolicyObjective::DppoKl ||
                          objective == PolicyObjective::ClipCov || objective == PolicyObjective::KlCov;
  check(!token_only || ratio_level == RatioLevel::Token, "algorithm.policy_loss = \"",
        policy_objective_name(objective), "\" works on token ratios; set algorithm.ratio_level = \"token\"");
  check(std::isfinite(dppo_ratio_cap) && dppo_ratio_cap > 0, "algorithm.dppo_ratio_cap must be > 0, got ",
        dppo_ratio_cap, " (the paper's code uses 20)");
  check(std::isfinite(clip_cov_fraction) && clip_cov_fraction > 0 && clip_cov_fraction <= 1,
        "algorithm.clip_cov_fraction must be in (0, 1], got ", clip_cov_fraction, " (the paper uses 2e-4)");
  check(std::isfinite(clip_cov_low) && std::isfinite(clip_cov_high) && clip_cov_low < clip_cov_high,
        "algorithm.clip_cov_low must be below algorithm.clip_cov_high, got ", clip_cov_low, " and ", clip_cov_high,
        " (the paper uses 1 and 5)");
  check(std::isfinite(kl_cov_fraction) && kl_cov_fraction > 0 && kl_cov_fraction <= 1,
        "algorithm.kl_cov_fraction must be in (0, 1], got ", kl_cov_fraction, " (the paper uses 2e-3)");
  check(std::isfinite(kl_cov_coef) && kl_cov_coef >= 0, "algorithm.kl_cov_coef must be >= 0, got ", kl_cov_coef,
        " (the paper uses 1)");
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

  const auto lp_on = torch::where(on, logp, zero);  // log pi where it is a loss token (finite gradient path)
  torch::Tensor loss;
  torch::Tensor region_out, cov_chosen;  // [B, T] bool: dppo's masked tokens; clip_cov/kl_cov's chosen tokens
  switch (options.objective) {
    case PolicyObjective::Clip:
    case PolicyObjective::ClipCov: {
      const auto loss_unclipped = -adv * ratio;
      const auto loss_clipped = -adv * ratio.clamp(1.0 - options.eps_low, 1.0 + options.eps_high);
      loss = torch::maximum(loss_unclipped, loss_clipped);  // -min(r A, clip(r) A)
      if (options.dual_clip > 0) {
        loss = torch::where(adv < 0, torch::minimum(loss, -adv * options.dual_clip), loss);
      }
      if (options.objective == PolicyObjective::ClipCov) {
        torch::NoGradGuard no_grad;
        const auto cov = token_covariance(logp, adv, on);
        const auto clipped = (loss_clipped > loss_unclipped) & on;
        const auto eligible = on & ~clipped & (cov > options.clip_cov_low) & (cov < options.clip_cov_high);
        cov_chosen = choose_clip_cov(eligible, on, old, options.clip_cov_fraction);
      }
      if (cov_chosen.defined()) loss = torch::where(cov_chosen, zero, loss);
      break;
    }
    case PolicyObjective::Cispo: {
      const auto w = ratio.detach().clamp(1.0 - options.eps_low, 1.0 + options.eps_high);
      loss = -adv * w * lp_on;
      break;
    }
    case PolicyObjective::DppoTv:
    case PolicyObjective::DppoKl: {
      torch::Tensor inside;
      {
        torch::NoGradGuard no_grad;
        const auto lpd = torch::where(on, logp.detach(), zero).to(torch::kFloat64);
        const auto lpo = torch::where(on, old, zero).to(torch::kFloat64);
        const auto p = lpd.exp(), p_old = lpo.exp();
        if (options.objective == PolicyObjective::DppoTv) {
          inside = torch::where(adv > 0, (p - p_old) <= options.eps_high, (p - p_old) >= -options.eps_low);
        } else {
          // Binary KL(p_old || p) of the sampled token's Bernoulli: p_old log(p_old/p) + (1-p_old) log((1-p_old)/(1-p)).
          constexpr double kTiny = 1e-12;
          const auto bkl = p_old * (lpo - lpd) +
                           (1 - p_old) * (torch::log1p(-p_old.clamp_max(1 - kTiny)) - torch::log1p(-p.clamp_max(1 - kTiny)));
          inside = torch::where(adv > 0, (bkl <= options.eps_high) | (p <= p_old), (bkl <= options.eps_low) | (p >= p_old));
        }
        region_out = on & ~inside;
      }
      const auto w = ratio.detach().clamp_max(options.dppo_ratio_cap);
      loss = torch::where(region_out, zero, -adv * w * lp_on);
      break;
    }
    case PolicyObjective::KlCov: {
      loss = -adv * ratio;
      const auto cov = token_covariance(logp, adv, on);
      cov_chosen = choose_kl_cov(cov, on, options.kl_cov_fraction);
      loss = loss + torch::where(cov_chosen, options.kl_cov_coef * log_ratio.abs(), zero);
      break;
    }
  }

  PolicyLossResult result;
  result.per_token = torch::where(on, loss, zero);
  if (masked.defined()) result.per_token = torch::where(masked, zero, result.per_token);
  result.stats = stats_of(on, ratio, log_ratio, adv, options);
  if (result.stats.n_tokens > 0) {
    torch::NoGradGuard no_grad;
    if (guarded) {
      if (capped.defined()) result.stats.capped_frac = capped.sum().item<double>() / result.stats.n_tokens;
      result.stats.masked_frac = masked.sum().item<double>() / result.stats.n_tokens;
    }
    if (region_out.defined()) result.stats.region_frac = region_out.sum().item<double>() / result.stats.n_tokens;
    if (cov_chosen.defined()) result.stats.cov_frac = cov_chosen.sum().item<double>() / result.stats.n_tokens;
  }
  return result;
}

}  // namespace rlf::algo

// Loss aggregation with step-global normalisers; see loss_aggregation.h.
#include "algorithms/loss_aggregation.h"

#include <cmath>

#include "algorithms/checks.h"
#include "algorithms/names.h"
#include "util/error.h"

namespace rlf::algo {
namespace {

constexpr detail::NameTable<LossAggregation, 3> kAggregationNames{{
    {LossAggregation::TokenMean, "token_mean"},
    {LossAggregation::SeqMeanTokenMean, "seq_mean_token_mean"},
    {LossAggregation::SeqMeanTokenSumNorm, "seq_mean_token_sum_norm"},
}};

void check_mask(const torch::Tensor& mask, std::string_view fn) {
  detail::check_bt(mask, fn, "mask");
  if (c10::isFloatingType(mask.scalar_type())) {
    torch::NoGradGuard no_grad;
    check(torch::isfinite(mask).all().item<bool>() && (mask >= 0).all().item<bool>(), fn,
          ": mask weights must be finite and >= 0");
  }
}

}  // namespace

LossAggregation parse_loss_aggregation(std::string_view name) {
  return detail::parse_name(kAggregationNames, "loss aggregation", name);
}

std::vector<std::string> loss_aggregation_names() { return detail::names_list(kAggregationNames); }

std::string_view loss_aggregation_name(LossAggregation mode) { return detail::name_of(kAggregationNames, mode); }

LossTotals& LossTotals::operator+=(const LossTotals& other) {
  n_tokens += other.n_tokens;
  n_sequences += other.n_sequences;
  return *this;
}

LossTotals count_loss_totals(const torch::Tensor& mask) {
  check_mask(mask, "count_loss_totals");
  torch::NoGradGuard no_grad;
  const auto w = mask.detach().to(torch::kFloat64);  // [B, T]
  LossTotals t;
  t.n_tokens = w.sum().item<double>();
  t.n_sequences = (w.sum(1) > 0).sum().item<int64_t>();
  return t;
}

void AggregationOptions::validate() const {
  if (mode == LossAggregation::SeqMeanTokenSumNorm) {
    check(max_tokens > 0, "AggregationOptions: max_tokens must be > 0 for seq_mean_token_sum_norm, got ",
          max_tokens, "; set it to the generation's maximum completion length");
  }
}

torch::Tensor aggregate_loss(const torch::Tensor& per_token, const torch::Tensor& mask,
                             const LossTotals& step_totals, const AggregationOptions& options) {
  options.validate();
  constexpr std::string_view fn = "aggregate_loss";
  detail::check_bt(per_token, fn, "per_token");
  check(c10::isFloatingType(per_token.scalar_type()), fn, ": per_token must be a floating tensor, got ",
        per_token.scalar_type());
  check_mask(mask, fn);
  check(mask.sizes() == per_token.sizes(), fn, ": mask has shape ", mask.sizes(), " but per_token has ",
        per_token.sizes(), "; they must match");
  check(std::isfinite(step_totals.n_tokens) && step_totals.n_tokens >= 0 && step_totals.n_sequences >= 0, fn,
        ": step totals must be >= 0, got n_tokens=", step_totals.n_tokens,
        " n_sequences=", step_totals.n_sequences);

  const auto on = mask != 0;                                // [B, T]
  const auto w = mask.detach().to(per_token.scalar_type());  // [B, T] weights
  const auto zero = torch::zeros({}, per_token.options());
  const auto weighted = torch::where(on, per_token * w, zero);  // [B, T]; masked garbage -> 0, zero grad

  const LossTotals local = count_loss_totals(mask);
  if (local.n_tokens == 0) return weighted.sum() * 0.0;  // nothing to learn here; keep the graph
  check(local.n_tokens <= step_totals.n_tokens * (1 + 1e-9) && local.n_sequences <= step_totals.n_sequences, fn,
        ": this micro-batch has n_tokens=", local.n_tokens, " n_sequences=", local.n_sequences,
        " but the step totals are n_tokens=", step_totals.n_tokens, " n_sequences=", step_totals.n_sequences,
        "; add count_loss_totals(mask) of every micro-batch of the step to the totals");

  switch (options.mode) {
    case LossAggregation::TokenMean:
      return weighted.sum() / step_totals.n_tokens;
    case LossAggregation::SeqMeanTokenMean: {
      const auto seq_weight = w.sum(1).clamp_min(1e-30);  // [B]; rows without loss tokens sum to 0 anyway
      return (weighted.sum(1) / seq_weight).sum() / static_cast<double>(step_totals.n_sequences);
    }
    case LossAggregation::SeqMeanTokenSumNorm:
      return (weighted.sum(1) / static_cast<double>(options.max_tokens)).sum() /
             static_cast<double>(step_totals.n_sequences);
  }
  fail(fn, ": unhandled aggregation mode");
}

}  // namespace rlf::algo

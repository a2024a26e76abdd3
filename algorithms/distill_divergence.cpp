#include "algorithms/distill_divergence.h"

#include "algorithms/names.h"

#include <cmath>
#include <limits>

#include <torch/torch.h>

#include "util/error.h"

namespace rlf::algo {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// log-probs of the tokens of `logits` [..., V] (fp32) outside `ids` [..., k]:
// [..., 1]; -inf (no gradient) when the ids cover the vocabulary.
torch::Tensor tail_logprob(const torch::Tensor& logits, const torch::Tensor& ids, const torch::Tensor& lse) {
  if (ids.size(-1) >= logits.size(-1)) return torch::full_like(lse, -kInf).detach();
  return torch::logsumexp(logits.scatter(-1, ids, -kInf), -1, /*keepdim=*/true) - lse;
}

// sum_b exp(p_b) (p_b - q_b) over the last dimension: KL(P || Q) of bucket
// log-probs; buckets with p_b = -inf add exactly 0, with zero gradient.
torch::Tensor kl_of_buckets(const torch::Tensor& p, const torch::Tensor& q) {
  const auto live = torch::isfinite(p);
  const auto zero = torch::zeros({}, p.options());
  const auto ps = torch::where(live, p, zero), qs = torch::where(live, q, zero);
  return torch::where(live, ps.exp() * (ps - qs), zero).sum(-1);
}

}  // namespace

namespace {

constexpr detail::NameTable<DistillDivergence, 3> kDivergenceNames{{
    {DistillDivergence::ReverseKl, "reverse_kl"},
    {DistillDivergence::ForwardKl, "forward_kl"},
    {DistillDivergence::Jsd, "jsd"},
}};

}  // namespace

DistillDivergence parse_distill_divergence(std::string_view name) {
  return detail::parse_name(kDivergenceNames, "distill.divergence", name);
}

std::string_view distill_divergence_name(DistillDivergence divergence) {
  return detail::name_of(kDivergenceNames, divergence);
}

std::vector<std::string> distill_divergence_names() { return detail::names_list(kDivergenceNames); }

std::pair<torch::Tensor, torch::Tensor> teacher_topk_buckets(const torch::Tensor& logits, int64_t k) {
  torch::NoGradGuard ng;
  const int64_t V = logits.size(-1);
  check(k >= 1 && k <= V, "teacher_topk_buckets: k = ", k, " outside [1, ", V, "]");
  const auto lg = logits.to(torch::kFloat32);
  auto top = lg.topk(k, -1);  // sorted, most likely first
  const auto ids = std::get<1>(top);
  const auto lse = torch::logsumexp(lg, -1, /*keepdim=*/true);
  auto lp = torch::cat({std::get<0>(top) - lse, tail_logprob(lg, ids, lse)}, -1);
  return {ids, lp};
}

torch::Tensor bucket_logprobs(const torch::Tensor& logits, const torch::Tensor& ids) {
  check(ids.dim() == logits.dim() && ids.size(-1) >= 1 && ids.size(-1) <= logits.size(-1),
        "bucket_logprobs: ids [..., k] with 1 <= k <= V = ", logits.size(-1), " expected");
  const auto lg = logits.to(torch::kFloat32);
  const auto lse = torch::logsumexp(lg, -1, /*keepdim=*/true);
  return torch::cat({lg.gather(-1, ids) - lse, tail_logprob(lg, ids, lse)}, -1);
}

torch::Tensor bucket_divergence(const torch::Tensor& student_lp, const torch::Tensor& teacher_lp,
                                DistillDivergence divergence, double beta) {
  check(student_lp.sizes() == teacher_lp.sizes(), "bucket_divergence: student ", student_lp.sizes(), " and teacher ",
        teacher_lp.sizes(), " buckets differ");
  const auto s = student_lp, t = teacher_lp.detach();
  switch (divergence) {
    case DistillDivergence::ReverseKl: return kl_of_buckets(s, t);
    case DistillDivergence::ForwardKl: return kl_of_buckets(t, s);
    case DistillDivergence::Jsd: break;
  }
  check(std::isfinite(beta) && beta > 0 && beta < 1, "distill.beta must be in (0, 1) for the jsd (got ", beta, ")");
  // log M = logsumexp(log(1 - beta) + s, log(beta) + t); buckets empty in both stay -inf (no NaN gradient).
  const auto empty = torch::isinf(s) & torch::isinf(t);
  const auto zero = torch::zeros({}, s.options());
  const auto s0 = torch::where(empty, zero, s), t0 = torch::where(empty, zero, t);
  auto m = torch::logsumexp(torch::stack({s0 + std::log1p(-beta), t0 + std::log(beta)}), 0);
  m = torch::where(empty, torch::full({}, -kInf, s.options()), m);
  return beta * kl_of_buckets(t, m) + (1 - beta) * kl_of_buckets(s, m);
}

}  // namespace rlf::algo

#include "train/topk_distill_term.h"

#include <cmath>

#include "util/error.h"

namespace rlf {

TopKDistillTerm::TopKDistillTerm(double coef, algo::DistillDivergence divergence, double beta,
                                 algo::AggregationOptions aggregation)
    : coef_(coef), divergence_(divergence), beta_(beta), aggregation_(aggregation) {
  check(std::isfinite(coef_) && coef_ > 0, "distill.coef must be > 0 (got ", coef_, ")");
  check(divergence_ != algo::DistillDivergence::Jsd || (std::isfinite(beta_) && beta_ > 0 && beta_ < 1),
        "distill.beta must be in (0, 1) (got ", beta_, ")");
  aggregation_.validate();
}

torch::Tensor TopKDistillTerm::weights(const MicroBatch& mb) const { return mb.weight_where(Stream::teacher_logprob); }

torch::Tensor TopKDistillTerm::per_token(const TermInput& in, TermSums& sums) const {
  if (!in.mb.has(Stream::teacher_topk_logprob)) return torch::zeros_like(in.mb[Stream::loss_weight]);
  check(in.teacher_buckets.defined(), "loss term 'distill': the trainer computed no log-probs of the teacher's top-k");
  const auto w = weights(in.mb);
  const auto& teacher = in.mb[Stream::teacher_topk_logprob];
  const auto zero = torch::zeros({}, in.teacher_buckets.options());
  auto d = torch::where(w != 0, algo::bucket_divergence(in.teacher_buckets, teacher, divergence_, beta_), zero);
  {
    torch::NoGradGuard ng;
    sums["distill/kl"] += (d.detach() * w).sum().item<double>();
    sums["distill/teacher_tail"] += (teacher.select(-1, -1).exp() * w).sum().item<double>();
    sums["distill/student_tail"] += (in.teacher_buckets.detach().select(-1, -1).exp() * w).sum().item<double>();
  }
  return d;
}

}  // namespace rlf

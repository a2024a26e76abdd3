// The loss term "distill" with distill.top_k > 0 (train/distillation.h): on
// every token of an episode with a teacher, the divergence between the
// policy's and the teacher's next-token distributions, both coarse-grained
// to the teacher's top-k tokens at that position plus one tail bucket
// (algorithms/distill_divergence.h):
//
//   L_t = coef * D(policy_t || teacher_t),  D = reverse_kl | forward_kl | jsd(beta)
//
// The teacher's buckets come with the micro-batch (Stream::teacher_topk_id, teacher_topk_logprob);
// the policy's from the trainer's forward, in the same chunks of logits as
// its token log-probs (CausalLMImpl::token_logprobs_selected). Tokens with
// loss weight 0 — prompts, tool results and other observations, feedback,
// padding — get exactly 0 with zero gradient (tested).
#pragma once

#include "algorithms/distill_divergence.h"
#include "train/loss_terms.h"

namespace rlf {

class TopKDistillTerm final : public LossTerm {
 public:
  // `beta`: the jsd's (0 < beta < 1; read by Jsd only).
  TopKDistillTerm(double coef, algo::DistillDivergence divergence, double beta, algo::AggregationOptions aggregation);
  std::string name() const override { return "distill"; }
  double coef() const override { return coef_; }
  bool needs_teacher_topk() const override { return true; }
  // The loss weights of tokens with a finite teacher log-prob; 0 elsewhere (no teacher, or dropped by distill.guard).
  torch::Tensor weights(const MicroBatch& mb) const override;
  algo::AggregationOptions aggregation() const override { return aggregation_; }
  // Diagnostics per teacher token: distill/kl (the divergence D; the name
  // kept from the sampled-token term), distill/teacher_tail (the teacher's
  // tail mass), distill/student_tail (the policy's).
  torch::Tensor per_token(const TermInput& in, TermSums& sums) const override;

 private:
  double coef_;
  algo::DistillDivergence divergence_;
  double beta_;
  algo::AggregationOptions aggregation_;
};

}  // namespace rlf

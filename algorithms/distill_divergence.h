// Divergences between a student's and a teacher's next-token distributions
// for on-policy distillation (train/distillation.h), on the teacher's top-k
// tokens plus one tail bucket holding the rest of the mass:
//
//   buckets(p) = (p(v_1), ..., p(v_k), 1 - sum_i p(v_i))
//
// where v_1..v_k are the teacher's k most likely tokens at that position. Both
// distributions are coarse-grained to the same k + 1 buckets, so each
// divergence below is a lower bound of its full-vocabulary value (data
// processing), equal to it when k = V (the tail is then empty: log-prob -inf,
// mass 0). With S, T the student's and teacher's bucket log-probs:
//
//   reverse_kl   KL(S || T) = sum_b s_b (log s_b - log t_b)  (mode-seeking; GKD beta = 1)
//   forward_kl   KL(T || S) = sum_b t_b (log t_b - log s_b)  (mean-seeking; GKD beta = 0)
//   jsd          beta KL(T || M) + (1 - beta) KL(S || M), M = beta T + (1 - beta) S,
//                0 < beta < 1: the generalised Jensen-Shannon divergence of
//                GKD (Agarwal et al. 2024, eq. 1), in the convention of TRL's
//                GKDTrainer.generalized_jsd_loss (tested against it)
//
// A bucket with mass 0 in the distribution weighting it contributes exactly
// 0 with zero gradient (0 log 0 = 0). Memory: callers pass logits a chunk of
// positions at a time ([..., n, V]); nothing here allocates more than the
// logits it is given.
#pragma once

#include <string>
#include <string_view>
#include <vector>
#include <utility>

#include <torch/types.h>

namespace rlf::algo {

enum class DistillDivergence { ReverseKl, ForwardKl, Jsd };

// "reverse_kl", "forward_kl", "jsd"; throws rlf::Error naming distill.divergence.
DistillDivergence parse_distill_divergence(std::string_view name);
std::string_view distill_divergence_name(DistillDivergence divergence);
std::vector<std::string> distill_divergence_names();  // "reverse_kl", "forward_kl", "jsd"

// The teacher's side: its k most likely tokens of `logits` [..., V] (ids
// [..., k] int64, most likely first) and their log-probs with the tail
// bucket's last ([..., k + 1] fp32). No gradient. 1 <= k <= V.
std::pair<torch::Tensor, torch::Tensor> teacher_topk_buckets(const torch::Tensor& logits, int64_t k);

// The student's side: log-probs of `ids` [..., k] under `logits` [..., V]
// and of the tail bucket (every other token), [..., k + 1] fp32,
// differentiable w.r.t. the logits. The ids of one position must differ.
torch::Tensor bucket_logprobs(const torch::Tensor& logits, const torch::Tensor& ids);

// Per-position divergence [...] between bucket log-probs student_lp and
// teacher_lp ([..., K], the same buckets), differentiable w.r.t. student_lp
// (teacher_lp is detached). `beta` is read by Jsd only, 0 < beta < 1.
torch::Tensor bucket_divergence(const torch::Tensor& student_lp, const torch::Tensor& teacher_lp,
                                DistillDivergence divergence, double beta = 0.5);

}  // namespace rlf::algo

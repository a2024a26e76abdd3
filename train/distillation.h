// Self-distillation from feedback, and on-policy distillation (docs/feedback.md),
// a stage of RL steps between scoring and credit plus the loss term "distill".
//
// The teacher is the policy itself with feedback in its context (teacher =
// "self": the reference answer, the rewards' words about the episode, or a
// correct sibling of its group), or another model directory (teacher =
// "model": ordinary on-policy distillation). The student is the policy as
// it sampled the episode, without that context. For every episode the stage
// computes the teacher's log-probs of the student's own tokens, with the
// teacher context in front of them instead of the prompt:
//
//   teacher_logprob[t] = log p_teacher(y_t | context, y_<t)
//
// and the term (train/loss_terms.h DistillTerm) adds, per student token,
// coef * k(log p_student(y_t), teacher_logprob[t]) with a KL estimator k
// (algorithms/kl.h; k2 by default, whose gradient is the exact on-policy
// gradient of the reverse KL(student || teacher)), pulling the student
// towards what the teacher would have written given the feedback (Agarwal et al. 2024; the
// Thinking Machines on-policy distillation note, 2025; self-distillation from
// hints: Snell et al. 2022).
//
// With top_k > 0 the stage also keeps, per student token, the teacher's k
// most likely tokens at that position and their log-probs plus a tail
// bucket for the rest of the mass (Episode::teacher_topk_*, computed a
// chunk of positions at a time: never a [batch, tokens, vocabulary] tensor
// beyond one chunk's logits), and the term is TopKDistillTerm
// (train/topk_distill_term.h): coef * D(student || teacher) on those k + 1
// buckets with D = reverse_kl, forward_kl or the generalised JSD(beta)
// (algorithms/distill_divergence.h), on the whole next-token distribution
// rather than the sampled token.
//
// The guard (distill.guard = "verifier_sign"; default "none"): the verifier
// gives each token's direction, the teacher only its size. The student's
// log-prob s_t is the one the episode carries (Episode::old_logprob: the
// rollout's, or the trainer's recomputation with
// algorithm.recompute_old_logprobs), t_t the teacher's:
//
//   episode the accuracy reward scored correct: keep token t iff t_t > s_t (the teacher would raise it)
//   episode it scored wrong:                    keep token t iff t_t < s_t (the teacher would lower it)
//   episode it did not score:                   keep none (no direction)
//
// A dropped token's teacher_logprob is NaN, "no target" (env/token_streams.h):
// its distill weight is 0, so the term gives it exactly 0 loss and gradient
// and leaves it out of its normaliser. With top_k > 0 the same mask applies
// to the position, by the sampled token's t_t and s_t; a kept position's
// update still moves the whole next-token distribution there. Metric:
// distill/guard_dropped, the share of distill tokens dropped. Why: a teacher
// reading a hint also pulls the student towards the hint's style, and on
// some seeds the policy collapsed into copying it; the guard keeps only the
// pulls the verifier's verdict agrees with.
//
// Context placeholders: {prompt} {reference} {explanation} {response} (the
// episode's own text), {sibling} (the first correct episode's text in the
// group; episodes of groups with none get no teacher) and {critique} (the
// run's critic on the episode, [critic]: the teacher reads what the critic
// says about the student's attempt; an episode whose critique fails gets no
// teacher and is counted in distill/critic_failures). A context that does not fit the teacher's window with the
// episode's tokens is cut by the rule of feedback/feedback_prompt.h or, when
// even that fails, the episode gets no teacher; both are counted.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "algorithms/distill_divergence.h"
#include "algorithms/kl.h"
#include "config/enum_names.h"
#include "feedback/critic.h"
#include "rollout/policy.h"
#include "train/reducer.h"
#include "env/scored_group.h"
#include "util/json_util.h"

namespace rlf {

// distill.teacher: Self = the policy with distill.context in front; Frozen = the same context in front of the
// KL reference (the policy as RL starts, algorithm.kl_reference; saved for resume), a teacher that does not move
// with the student — a live teacher can follow the student into a degenerate fixed point (measured: the columns
// example's self-distillation collapsed to "1111..." with a live teacher); Model = the model at
// distill.teacher_path; Ema = the same context in front of an exponential moving average of the policy's
// weights (train/ema_weights.h: θ_ema ← d·θ_ema + (1 − d)·θ after every optimiser step, d = distill.ema_decay,
// starting from the policy as RL starts, after the warm start; saved with each checkpoint), a teacher between
// the two: it follows the student, slowly.
enum class DistillTeacherKind { Self, Frozen, Model, Ema };
const EnumNames<DistillTeacherKind>& distill_teacher_names();  // "self", "frozen", "model", "ema"

// distill.guard: None = every token with a teacher is trained; VerifierSign = only where the teacher's direction
// agrees with the accuracy reward's verdict (above).
enum class DistillGuard { None, VerifierSign };
const EnumNames<DistillGuard>& distill_guard_names();  // "none", "verifier_sign"

struct DistillOptions {
  bool enabled = false;                     // [distill] enabled
  double coef = 1.0;                        // weight of the distill term
  // 0 (default): the sampled-token estimate of the reverse KL with `estimator`;
  // k >= 1: `divergence` on the teacher's top-k tokens plus a tail bucket.
  int64_t top_k = 0;
  algo::DistillDivergence divergence = algo::DistillDivergence::ReverseKl;  // reverse_kl | forward_kl | jsd (top_k > 0)
  double beta = 0.5;                        // jsd: the mixture's teacher weight, in (0, 1) (TRL's GKD beta)
  // k2 (default): the loss (l - t)^2 / 2, whose gradient (l - t)·∇l is the
  // exact on-policy gradient of KL(student || teacher). k3's gradient
  // (1 - e^{t - l})·∇l grows exponentially where the teacher is far more
  // confident than the student: measured, it collapsed the example (docs/feedback.md).
  algo::KlEstimator estimator = algo::KlEstimator::K2;
  DistillTeacherKind teacher = DistillTeacherKind::Self;  // distill.teacher
  std::string teacher_path;                 // teacher = Model: its directory (same tokenizer as the policy)
  double ema_decay = 0.99;                  // teacher = Ema: d of the average, in (0, 1) (~1 / (1 - d) optimiser steps)
  // The teacher's prompt; "" = by teacher: self, frozen and ema "The answer is {reference}.\n{prompt}",
  // model "{prompt}".
  std::string context;
  bool failed_only = false;                 // distill on episodes the accuracy reward scored wrong only
  DistillGuard guard = DistillGuard::None;  // distill.guard: "none" | "verifier_sign" (above)

  // Throws rlf::Error naming the distill.* key.
  void validate() const;
  // `context`, or its default for `teacher` when "".
  std::string teacher_context() const;
  // The context has {critique}: the stage asks the run's critic.
  bool needs_critic() const { return enabled && teacher_context().find("{critique}") != std::string::npos; }
};

struct DistillStats {
  int64_t n_episodes = 0;         // episodes given teacher log-probs
  int64_t n_skipped = 0;          // without a teacher: no correct sibling, failed_only, or no room
  int64_t n_truncated = 0;        // teacher contexts cut to fit
  int64_t n_critic_failures = 0;  // {critique}: episodes whose critique failed (no teacher)
  int64_t n_generated_tokens = 0; // {critique}: tokens a local critic generated (count against the run's budget)
  double teacher_s = 0;           // time in teacher forwards
  bool guarded = false;           // distill.guard = "verifier_sign": the metrics have distill/guard_dropped
  int64_t n_guard_tokens = 0;     // guarded: the policy tokens (loss weight > 0) given teacher log-probs
  int64_t n_guard_dropped = 0;    // ... of which the guard dropped
  // "distill/episodes", "distill/skipped", ...; guarded: "distill/guard_dropped" (dropped / tokens, over the ranks).
  Json metrics(Reducer& reducer) const;
};

// distill.guard = "verifier_sign" on one episode with teacher log-probs and the verdict `correct` (unset: the
// accuracy reward did not score it): sets teacher_logprob to NaN on the policy tokens (loss weight > 0) it drops.
// Returns the number dropped.
int64_t apply_verifier_sign_guard(Episode& episode, std::optional<bool> correct);

class DistillTeacher {
 public:
  // Borrows the policy (and the critic, needed when the context has
  // {critique}); loads the teacher model when options.teacher = "model";
  // teacher = "frozen" reads `teacher_model` as the KL reference, teacher =
  // "ema" as the EMA weights (required then; whoever owns them updates them).
  DistillTeacher(Policy& policy, DistillOptions options, size_t accuracy_component, bool add_special_tokens,
                 int64_t micro_batch_size, Critic* critic = nullptr, CausalLM teacher_model = nullptr);
  // Sets Episode::teacher_logprob on the episodes that get a teacher.
  DistillStats add_teacher_logprobs(std::vector<ScoredGroup>& groups);

 private:
  // Sets teacher_logprob (and with top_k the teacher_topk_*) on `owners` from the teacher's views of them.
  void score_views(Policy& teacher, const std::vector<Episode>& views, const std::vector<Episode*>& owners);

  Policy& policy_;
  Critic* critic_;                       // {critique} in the context; else may be null
  std::unique_ptr<Policy> own_teacher_;  // teacher = "model"; "frozen" / "ema": the policy's tokenizer, teacher_model
  DistillOptions options_;
  size_t accuracy_component_;
  bool add_special_tokens_;
  int64_t micro_batch_size_;
};

}  // namespace rlf

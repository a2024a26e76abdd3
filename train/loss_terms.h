// The trainer's loss is a sum of named terms, each with its own per-token
// weights and its own normaliser, global over the optimisation step:
//
//   L = sum_terms coef_term * aggregate(per_token_term, weights_term, totals_term)
//
// where totals_term (algorithms/loss_aggregation.h LossTotals) counts the
// term's weights over every micro-batch of the step (on every rank, through
// the Reducer). A method adds a term (preference, value, distillation...),
// never a loop. The terms here (math and papers in docs/algorithms.md):
//
//   policy   policy-gradient objective with per-token advantages: the
//            clipped surrogate (GRPO, DAPO, Dr.GRPO, RLOO, REINFORCE++, GSPO,
//            dual clip), CISPO, DPPO, Clip-Cov or KL-Cov
//            (algorithms/policy_loss.h), the off-policy safeguards on tokens
//            of off-policy episodes, the rollout correction (TIS, sequence
//            masking) on tokens whose old log-probs the trainer recomputed
//            (algorithms/rollout_correction.h); tokens of refinement episodes
//            (Critique-GRPO) take the shaped objective -A * p/(p + gamma)
//            instead (algorithms/policy_shaping.h)
//   nft      negative-aware fine-tuning (algorithms/nft_loss.h): instead of
//            the policy term, on rows whose group's correct rate is in (0, 1)
//   ce       cross-entropy on the weighted tokens: -log p (SFT is this term alone)
//   kl       beta * k(logp, ref_logp), k1/k2/k3, to the frozen reference
//   entropy  -coef * H(p) on the weighted tokens (an entropy bonus)
//   distill  coef * k(logp, teacher_logp) on tokens with a (finite) teacher
//            log-prob: reverse KL to a teacher (train/distillation.h; NaN =
//            dropped by distill.guard); with
//            distill.top_k > 0 coef * D(policy || teacher) on the teacher's
//            top-k tokens plus a tail bucket instead (train/topk_distill_term.h)
//   pref     a preference loss on whole sequences (DPO, IPO, hinge, SimPO,
//            SPPO; algorithms/preference_loss.h): each group's best and worst
//            episode by Episode::reward form a pair (SPPO: every episode with
//            its win rate in the group); the pair's loss is spread over both
//            rows, so the mean over rows (seq_mean_token_mean) is the mean
//            over pairs. Offline DPO's groups are (chosen, rejected) pairs;
//            online DPO's are the rollout's groups.
//   rm       the Bradley-Terry loss of a reward model (a classifier, no
//            log-probs): each group's best and worst episode form a pair as
//            for pref, scored by the model's score head at each row's last
//            input position (rm/reward_model.h): -log sigma(r_c - r_r - m).
//   value    PPO's clipped value loss of a critic (a classifier, no
//            log-probs; train/value_model.h) on the policy tokens of
//            episodes with GAE returns: 1/2 max((V - R)^2, (V_clip - R)^2)
//            (algorithms/value_loss.h), V read at the position that chose
//            the token.
//
// Every term's per-token loss is exactly 0, with exactly zero gradient, where
// its weights are 0 (tested): prompt, observation and feedback tokens are
// never trained on.
#pragma once

#include <torch/torch.h>

#include <map>
#include <memory>
#include <string>

#include "algorithms/kl.h"
#include "algorithms/loss_aggregation.h"
#include "algorithms/nft_loss.h"
#include "algorithms/policy_loss.h"
#include "algorithms/policy_shaping.h"
#include "algorithms/rollout_correction.h"
#include "algorithms/preference_loss.h"
#include "train/micro_batch.h"

namespace rlf {

// One micro-batch as every term sees it.
struct TermInput {
  const MicroBatch& mb;
  const torch::Tensor& logp;     // [B, T] fp32 log p(target), with gradient (undefined when no term needs_logprobs())
  const torch::Tensor& entropy;  // [B, T] fp32 entropy of each position's distribution (with gradient when a term
                                 // needs_entropy()), or undefined
  const torch::Tensor& scores;   // [B, T, num_labels] fp32 score head of a classifier at every position, with
                                 // gradient, when a term needs_scores(); else undefined
  torch::Tensor teacher_buckets = {};  // [B, T, k + 1] fp32 log-probs of Stream::teacher_topk_id and the tail
                                       // bucket under the policy, with gradient, when a term needs_teacher_topk()
                                       // and the micro-batch has them; else undefined
};

// Diagnostics of one micro-batch: metric name -> sum over the term's
// weighted tokens (the trainer divides by the step's weight total).
using TermSums = std::map<std::string, double>;

class LossTerm {
 public:
  virtual ~LossTerm() = default;
  // Name in metrics ("loss/<name>") and messages.
  virtual std::string name() const = 0;
  // The term's weight in the sum (1 for policy and ce; beta, coef for kl, entropy).
  virtual double coef() const { return 1.0; }
  // Needs Stream::ref_logprob in the micro-batch (a reference model).
  virtual bool needs_reference() const { return false; }
  // Needs the entropy with gradient.
  virtual bool needs_entropy() const { return false; }
  // Reads the policy's token log-probs (false: a term on a classifier's scores).
  virtual bool needs_logprobs() const { return true; }
  // Reads the score head of a classifier (a reward model).
  virtual bool needs_scores() const { return false; }
  // Reads the policy's log-probs of the teacher's top-k tokens (TermInput::teacher_buckets).
  virtual bool needs_teacher_topk() const { return false; }
  // Per-token weights [B, T] of this term: its mask and the input of its normaliser.
  virtual torch::Tensor weights(const MicroBatch& mb) const { return mb[Stream::loss_weight]; }
  // How its per-token losses become one number.
  virtual algo::AggregationOptions aggregation() const { return {}; }
  // Per-token loss [B, T] (0 where weights == 0); diagnostics go to `sums`.
  virtual torch::Tensor per_token(const TermInput& in, TermSums& sums) const = 0;
  // Compares the episodes of a group with each other: the trainer keeps each
  // group in one micro-batch.
  virtual bool needs_whole_groups() const { return false; }
  // Its diagnostics are per sequence: the trainer divides them by the term's
  // sequence count rather than its weight total.
  virtual bool sums_per_sequence() const { return false; }
};

class PolicyGradientTerm final : public LossTerm {
 public:
  // `refinement`: the objective of refinement tokens (refine.objective, refine.gamma);
  // `correction`: TIS / sequence masking on rows with behaviour log-probs (Stream::behaviour_logprob).
  PolicyGradientTerm(algo::PolicyLossOptions loss, algo::AggregationOptions aggregation,
                     algo::OffPolicyLossOptions refinement = {}, algo::RolloutCorrectionOptions correction = {});
  std::string name() const override { return "policy"; }
  algo::AggregationOptions aggregation() const override { return aggregation_; }
  // Diagnostics per loss token: policy/* (clip fractions, ratio, approx_kl;
  // policy/region_frac for dppo_*, policy/cov_frac for clip_cov and kl_cov),
  // mismatch/* with the rollout correction (tis_weight_mean, capped_frac,
  // masked_frac: tokens of masked sequences, kl: k3 of KL(rollout || trainer)).
  torch::Tensor per_token(const TermInput& in, TermSums& sums) const override;

 private:
  algo::PolicyLossOptions loss_;
  algo::AggregationOptions aggregation_;
  algo::OffPolicyLossOptions refinement_;
  algo::RolloutCorrectionOptions correction_;
};

class NftTerm final : public LossTerm {
 public:
  NftTerm(algo::NftOptions options, algo::AggregationOptions aggregation);
  std::string name() const override { return "nft"; }
  algo::AggregationOptions aggregation() const override { return aggregation_; }
  // The loss weights of rows whose group's correct rate lies in (0, 1) and whose verdict is known; 0 elsewhere.
  torch::Tensor weights(const MicroBatch& mb) const override;
  // Diagnostics per token: nft/clamped_frac, nft/ratio_mean.
  torch::Tensor per_token(const TermInput& in, TermSums& sums) const override;

 private:
  algo::NftOptions options_;
  algo::AggregationOptions aggregation_;
};

class CrossEntropyTerm final : public LossTerm {
 public:
  explicit CrossEntropyTerm(double coef = 1.0) : coef_(coef) {}
  std::string name() const override { return "ce"; }
  double coef() const override { return coef_; }
  torch::Tensor per_token(const TermInput& in, TermSums& sums) const override;

 private:
  double coef_;
};

class KlTerm final : public LossTerm {
 public:
  KlTerm(double beta, algo::KlEstimator estimator, algo::AggregationOptions aggregation);
  std::string name() const override { return "kl"; }
  double coef() const override { return beta_; }
  bool needs_reference() const override { return true; }
  algo::AggregationOptions aggregation() const override { return aggregation_; }
  torch::Tensor per_token(const TermInput& in, TermSums& sums) const override;

 private:
  double beta_;
  algo::KlEstimator estimator_;
  algo::AggregationOptions aggregation_;
};

class EntropyTerm final : public LossTerm {
 public:
  EntropyTerm(double coef, algo::AggregationOptions aggregation);
  std::string name() const override { return "entropy"; }
  double coef() const override { return coef_; }
  bool needs_entropy() const override { return true; }
  algo::AggregationOptions aggregation() const override { return aggregation_; }
  // -H: minimising coef * (-H) raises the entropy.
  torch::Tensor per_token(const TermInput& in, TermSums& sums) const override;

 private:
  double coef_;
  algo::AggregationOptions aggregation_;
};

class DistillTerm final : public LossTerm {
 public:
  DistillTerm(double coef, algo::KlEstimator estimator, algo::AggregationOptions aggregation);
  std::string name() const override { return "distill"; }
  double coef() const override { return coef_; }
  // The loss weights of tokens with a finite teacher log-prob; 0 elsewhere (no teacher, or dropped by distill.guard).
  torch::Tensor weights(const MicroBatch& mb) const override;
  algo::AggregationOptions aggregation() const override { return aggregation_; }
  torch::Tensor per_token(const TermInput& in, TermSums& sums) const override;

 private:
  double coef_;
  algo::KlEstimator estimator_;
  algo::AggregationOptions aggregation_;
};

class PreferenceTerm final : public LossTerm {
 public:
  explicit PreferenceTerm(algo::PreferenceLossOptions options);
  std::string name() const override { return "pref"; }
  bool needs_reference() const override { return !options_.reference_free(); }
  bool needs_whole_groups() const override { return true; }
  bool sums_per_sequence() const override { return true; }
  // The loss weights of the rows that take part (a pair's two rows; SPPO:
  // rows of groups with two or more rewarded episodes); 0 elsewhere.
  torch::Tensor weights(const MicroBatch& mb) const override;
  algo::AggregationOptions aggregation() const override { return {.mode = algo::LossAggregation::SeqMeanTokenMean, .max_tokens = 0}; }
  // Diagnostics (per pair): pref/accuracy (implicit reward of chosen >
  // rejected), pref/margin, pref/chosen_reward, pref/rejected_reward,
  // pref/chosen_logp, pref/rejected_logp (mean log-prob per token).
  torch::Tensor per_token(const TermInput& in, TermSums& sums) const override;

 private:
  algo::PreferenceLossOptions options_;
};

class RewardModelTerm final : public LossTerm {
 public:
  // `margin` m >= 0 (reward_model.margin); `label`: the head output trained.
  explicit RewardModelTerm(double margin = 0.0, int64_t label = 0);
  std::string name() const override { return "rm"; }
  bool needs_logprobs() const override { return false; }
  bool needs_scores() const override { return true; }
  bool needs_whole_groups() const override { return true; }
  bool sums_per_sequence() const override { return true; }
  // The loss weights of a pair's two rows; 0 elsewhere.
  torch::Tensor weights(const MicroBatch& mb) const override;
  algo::AggregationOptions aggregation() const override { return {.mode = algo::LossAggregation::SeqMeanTokenMean, .max_tokens = 0}; }
  // Diagnostics (per pair): rm/accuracy (r_c > r_r), rm/margin (r_c - r_r),
  // rm/chosen_score, rm/rejected_score.
  torch::Tensor per_token(const TermInput& in, TermSums& sums) const override;

 private:
  double margin_;
  int64_t label_;
};

// Multi-objective reward models (ArmoRM's first stage): each head k regresses
// the episodes' ratings Episode::ratings[k] at the sequence's last input
// position (algo::rating_regression_loss; NaN ratings carry no loss); one
// loss per rated sequence, averaged over sequences.
class RatingTerm final : public LossTerm {
 public:
  RatingTerm() = default;
  std::string name() const override { return "rm_rating"; }
  bool needs_logprobs() const override { return false; }
  bool needs_scores() const override { return true; }
  bool sums_per_sequence() const override { return true; }
  // The loss weights of rows with at least one rating; 0 elsewhere.
  torch::Tensor weights(const MicroBatch& mb) const override;
  algo::AggregationOptions aggregation() const override { return {.mode = algo::LossAggregation::SeqMeanTokenMean, .max_tokens = 0}; }
  // Diagnostics (per rated sequence): rm/rating_mse.
  torch::Tensor per_token(const TermInput& in, TermSums& sums) const override;
};

// Process reward models: output 0 of the score head at each step's last
// token is the step's logit, trained by binary cross-entropy on the step
// label (algo::process_reward_loss), the label carried as the episode's
// value target there (train/process_steps.h); one loss per labelled step,
// averaged over steps.
class ProcessRewardTerm final : public LossTerm {
 public:
  ProcessRewardTerm() = default;
  std::string name() const override { return "prm"; }
  bool needs_logprobs() const override { return false; }
  bool needs_scores() const override { return true; }
  // The loss weights of labelled step ends; 0 elsewhere.
  torch::Tensor weights(const MicroBatch& mb) const override;
  algo::AggregationOptions aggregation() const override { return {.mode = algo::LossAggregation::TokenMean, .max_tokens = 0}; }
  // Diagnostics (per labelled step): prm/accuracy ((p > 0.5) == (label > 0.5)), prm/p_mean, prm/label_mean.
  torch::Tensor per_token(const TermInput& in, TermSums& sums) const override;
};

class ValueTerm final : public LossTerm {
 public:
  // `clip` eps >= 0 of the clipped value loss (value.clip; 0 = unclipped); `label`: the head output trained;
  // `coef`: the term's weight in the sum (value.coef when the head shares the policy's trunk).
  explicit ValueTerm(double clip = 0.2, int64_t label = 0, double coef = 1.0);
  std::string name() const override { return "value"; }
  double coef() const override { return coef_; }
  bool needs_logprobs() const override { return false; }
  bool needs_scores() const override { return true; }
  // The loss weights of episodes with value targets; 0 elsewhere.
  torch::Tensor weights(const MicroBatch& mb) const override;
  // Diagnostics (per token): value/clipfrac, value/mean, value/return_mean,
  // value/error (mean squared error to the returns).
  torch::Tensor per_token(const TermInput& in, TermSums& sums) const override;

 private:
  double clip_;
  int64_t label_;
  double coef_;
};

}  // namespace rlf

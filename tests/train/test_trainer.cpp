// The one trainer and its loss terms on a tiny random model:
//  - every term gives exactly zero gradient to tokens with loss weight 0
//    (prompt, observations, feedback), whatever those tokens are;
//  - on multi-turn episodes the trainer's log-probs equal the rollout's
//    (fast and module path);
//  - KL to a reference (k1/k2/k3) in the loss, the entropy bonus and the
//    cross-entropy of SFT equal values computed by hand from the model's
//    log-probs; the KL-in-reward shaping sits on policy tokens only;
//  - epochs x mini-batches: that many optimiser steps, each mini-batch whole
//    groups, every group once per epoch, in a seeded order;
//  - PPO's value term on a critic equals the clipped value loss by hand
//    from the critic's values, for any micro-batch size.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>

#include "env/episode_producer.h"
#include "model/loader.h"
#include "tests/support/test_env.h"
#include "tests/train/run_fixtures.h"
#include "train/distillation.h"
#include "train/loss_terms.h"
#include "train/rl_steps.h"
#include "train/topk_distill_term.h"
#include "train/trainer.h"
#include "train/value_model.h"
#include "rm/reward_model.h"

namespace rlf {
namespace {

CausalLM tiny_model(uint64_t seed) { return test::tiny_random_model(seed); }

// A hand-made two-turn episode: prompt (3), turn (4), observation (3), turn (3).
Episode two_turn_episode(int64_t group, uint32_t salt) {
  Episode e;
  e.group = group;
  std::vector<SegmentRole> roles = {SegmentRole::Prompt, SegmentRole::Policy, SegmentRole::Observation,
                                    SegmentRole::Policy};
  const int64_t lens[] = {3, 4, 3, 3};
  int64_t at = 0;
  for (size_t k = 0; k < roles.size(); ++k) {
    Segment s;
    s.role = roles[k];
    s.begin = at;
    s.end = at + lens[k];
    s.turn = k < 2 ? 0 : 1;
    for (int64_t t = at; t < s.end; ++t) {
      e.tokens.push_back(static_cast<int32_t>((salt * 131 + 17 * t) % 500 + 5));
      const bool policy = roles[k] == SegmentRole::Policy;
      e.loss_weight.push_back(policy ? 1.0f : 0.0f);
      e.old_logprob.push_back(policy ? -6.0f - 0.01f * static_cast<float>(t) : 0.0f);
      e.policy_version.push_back(policy ? 0 : -1);
      e.advantage.push_back(policy ? (salt % 2 ? 0.5f : -0.25f) : 0.0f);
    }
    at = s.end;
    e.segments.push_back(s);
  }
  e.n_prompt = 3;
  e.n_turns = 2;
  return e;
}

std::vector<float> logprobs_of(CausalLM& m, const Episode& e) {
  return recompute_logprobs(*m, {&e}, 8)[0];
}

TEST(LossTerms, WeightZeroTokensGetExactlyZeroGradient) {
  auto model = tiny_model(1);
  auto ref = tiny_model(2);
  std::vector<Episode> eps = {two_turn_episode(0, 1), two_turn_episode(0, 2)};
  // Observation tokens hold anything: extreme stored values must not leak either.
  eps[1].old_logprob[8] = -1e30f;
  for (auto& e : eps) e.ref_logprob = logprobs_of(ref, e);
  std::vector<const Episode*> view = {&eps[0], &eps[1]};
  MicroBatch mb = make_micro_batch(view, torch::kCPU);
  algo::AggregationOptions agg;
  std::vector<std::unique_ptr<LossTerm>> terms;
  terms.push_back(std::make_unique<PolicyGradientTerm>(algo::PolicyLossOptions{}, agg));
  terms.push_back(std::make_unique<CrossEntropyTerm>());
  terms.push_back(std::make_unique<KlTerm>(0.3, algo::KlEstimator::K3, agg));
  terms.push_back(std::make_unique<EntropyTerm>(0.1, agg));
  for (const auto& term : terms) {
    SCOPED_TRACE(term->name());
    auto hidden = forward_micro_batch(*model, mb);
    auto [logp, entropy] = model->token_logprobs_entropy(hidden, mb[Stream::targets], true);
    logp.retain_grad();
    entropy.retain_grad();
    TermSums sums;
    TermInput in{mb, logp, entropy, torch::Tensor()};
    auto w = term->weights(mb);
    auto loss = algo::aggregate_loss(term->per_token(in, sums), w, algo::count_loss_totals(w), term->aggregation());
    loss.backward();
    const auto zero = (mb[Stream::loss_weight] == 0);
    float total = 0;
    for (const torch::Tensor& g : {logp.grad(), entropy.grad()}) {
      if (!g.defined()) continue;
      EXPECT_EQ(g.masked_select(zero).abs().max().item<float>(), 0.0f);
      total += g.abs().sum().item<float>();
    }
    EXPECT_GT(total, 0.0f) << "the term gave no gradient at all";
    model->zero_grad();
  }
}

// `term` on `mb` under `model`: the token log-probs (their gradient kept) and
// the per-token loss, whose sum has been backpropagated.
std::pair<torch::Tensor, torch::Tensor> per_token_with_grad(CausalLM& model, const MicroBatch& mb, const LossTerm& term,
                                                            TermSums& sums) {
  auto logp = model->token_logprobs(forward_micro_batch(*model, mb), mb[Stream::targets]);
  logp.retain_grad();
  TermInput in{mb, logp, torch::Tensor(), torch::Tensor()};
  auto per = term.per_token(in, sums);
  per.sum().backward();
  return {logp, per};
}

// A micro-batch mixing a rollout and a refinement (Critique-GRPO): the
// refinement's tokens take -A * p/(p + gamma) whatever their stored
// log-probs (refine.objective = "likelihood": -A * log p, gradient -A), the
// rollout's the clipped surrogate, and nothing else moves.
TEST(LossTerms, PolicyTermShapesRefinementTokensOnly) {
  for (const auto objective : {algo::OffPolicyObjective::Shaped, algo::OffPolicyObjective::Likelihood}) {
    const bool shaped = objective == algo::OffPolicyObjective::Shaped;
    SCOPED_TRACE(shaped ? "shaped" : "likelihood");
    auto model = tiny_model(1);
    std::vector<Episode> eps = {two_turn_episode(0, 1), two_turn_episode(0, 2)};
    eps[1].source = EpisodeSource::Refinement;
    eps[1].on_policy = false;
    for (size_t t = 0; t < eps[1].tokens.size(); ++t)
      if (eps[1].loss_weight[t] > 0) eps[1].old_logprob[t] = -1e30f;  // another context's: never read
    std::vector<const Episode*> view = {&eps[0], &eps[1]};
    MicroBatch mb = make_micro_batch(view, torch::kCPU);
    ASSERT_TRUE(mb.has(Stream::shaped));
    const double gamma = 0.25;
    PolicyGradientTerm term(algo::PolicyLossOptions{}, algo::AggregationOptions{},
                            algo::OffPolicyLossOptions{objective, gamma});
    TermSums sums;
    auto [logp, per] = per_token_with_grad(model, mb, term, sums);
    const auto rollout_mask = mb[Stream::loss_weight] * (1 - mb[Stream::shaped]);
    auto clipped =
        algo::policy_loss(logp.detach(), mb[Stream::old_logprob], mb[Stream::advantage], rollout_mask).per_token;
    int64_t n_shaped = 0;
    for (int64_t t = 0; t < mb[Stream::loss_weight].size(1); ++t) {
      const double w0 = mb[Stream::loss_weight][0][t].item<double>(), w1 = mb[Stream::loss_weight][1][t].item<double>();
      EXPECT_EQ(mb[Stream::shaped][0][t].item<float>(), 0.0f);
      // Row 0 (rollout): the clipped surrogate.
      EXPECT_NEAR(per[0][t].item<double>(), clipped[0][t].item<double>(), 1e-6) << t;
      // Row 1 (refinement): -A * p / (p + gamma) (or -A * log p) and its gradient, on policy tokens only.
      const double lp = logp[1][t].item<double>(), p = std::exp(lp), a = mb[Stream::advantage][1][t].item<double>();
      if (w1 > 0) {
        ++n_shaped;
        EXPECT_NEAR(per[1][t].item<double>(), shaped ? -a * p / (p + gamma) : -a * lp, 1e-6) << t;
        EXPECT_NEAR(logp.grad()[1][t].item<double>(), shaped ? -a * gamma * p / ((p + gamma) * (p + gamma)) : -a, 1e-6)
            << t;
      } else {
        EXPECT_EQ(per[1][t].item<double>(), 0.0);
        EXPECT_EQ(logp.grad()[1][t].item<double>(), 0.0);
      }
      if (w0 == 0) {
        EXPECT_EQ(logp.grad()[0][t].item<double>(), 0.0);
      }
    }
    EXPECT_EQ(n_shaped, 7);
    EXPECT_EQ(sums.at("policy/shaped_frac"), 7.0);
    EXPECT_TRUE(std::isfinite(per.sum().item<double>()));
  }
}

// The distill term: coef-free per-token k(logp, teacher_logp) on tokens of
// episodes that have teacher log-probs, nothing (and no gradient) elsewhere.
TEST(LossTerms, DistillTermIsTheKlToTheTeacherOnTeacherTokensOnly) {
  auto model = tiny_model(1);
  auto teacher = tiny_model(2);
  std::vector<Episode> eps = {two_turn_episode(0, 1), two_turn_episode(0, 2)};
  eps[0].teacher_logprob = logprobs_of(teacher, eps[0]);  // eps[1] has no teacher
  std::vector<const Episode*> view = {&eps[0], &eps[1]};
  MicroBatch mb = make_micro_batch(view, torch::kCPU);
  DistillTerm term(0.5, algo::KlEstimator::K3, algo::AggregationOptions{});
  EXPECT_EQ(term.coef(), 0.5);
  auto w = term.weights(mb);
  EXPECT_EQ(w[1].abs().sum().item<float>(), 0.0f);
  EXPECT_EQ(w[0].sum().item<float>(), 7.0f);
  TermSums sums;
  auto [logp, per] = per_token_with_grad(model, mb, term, sums);
  auto want = algo::kl_estimate(logp.detach(), mb[Stream::teacher_logprob], w, algo::KlEstimator::K3);
  EXPECT_TRUE(torch::allclose(per.detach(), want));
  EXPECT_EQ(logp.grad().masked_select(w == 0).abs().max().item<float>(), 0.0f);
  EXPECT_GT(logp.grad().abs().sum().item<float>(), 0.0f);
  EXPECT_NEAR(sums.at("distill/kl"), (want * w).sum().item<double>(), 1e-6);
}

// distill.guard = "verifier_sign" by hand: on a correct episode only the
// tokens the teacher would raise (t > s) are trained, on a wrong one only
// those it would lower (t < s), on an unscored one none; the others' teacher
// log-probs become NaN and the term gives them weight 0, exactly 0 loss and
// exactly zero gradient, for every estimator. s = the student's log-probs,
// the episodes' old_logprob, here also the trainer's logp.
TEST(LossTerms, VerifierSignGuardTrainsOnlyWhereTeacherAndVerifierAgree) {
  const std::vector<float> s_right = {-1.0f, -2.0f, -0.5f, -3.0f}, t_right = {-0.5f, -2.5f, -0.5f, -1.0f};
  const std::vector<float> s_wrong = {-1.0f, -2.0f, -0.25f, -3.0f}, t_wrong = {-2.0f, -1.0f, -1.25f, -3.5f};
  auto episode = [](int64_t group, const std::vector<float>& s, const std::vector<float>& t) {
    Episode e = Episode::single_turn(group, {7, 8}, {11, 12, 13, 14}, s);
    e.teacher_logprob = {0.0f, 0.0f};
    e.teacher_logprob.insert(e.teacher_logprob.end(), t.begin(), t.end());
    return e;
  };
  std::vector<Episode> eps = {episode(0, s_right, t_right), episode(1, s_wrong, t_wrong)};
  // Correct: t - s = 0.5, -0.5, 0 (a tie raises nothing), 2 -> keeps tokens 0 and 3.
  EXPECT_EQ(apply_verifier_sign_guard(eps[0], true), 2);
  // Wrong: t - s = -1, 1, -1, -0.5 -> keeps tokens 0, 2 and 3.
  EXPECT_EQ(apply_verifier_sign_guard(eps[1], false), 1);
  Episode unscored = episode(2, s_right, t_right);
  EXPECT_EQ(apply_verifier_sign_guard(unscored, std::nullopt), 4);
  const std::vector<std::vector<bool>> kept = {{true, false, false, true}, {true, false, true, true}};
  for (size_t b = 0; b < 2; ++b)
    for (size_t i = 0; i < 4; ++i) EXPECT_EQ(std::isnan(eps[b].teacher_logprob[2 + i]), !kept[b][i]) << b << " " << i;

  const std::vector<const Episode*> view = {&eps[0], &eps[1]};
  const MicroBatch mb = make_micro_batch(view, torch::kCPU);
  const std::vector<const std::vector<float>*> s = {&s_right, &s_wrong}, t = {&t_right, &t_wrong};
  for (algo::KlEstimator k : {algo::KlEstimator::K1, algo::KlEstimator::K2, algo::KlEstimator::K3}) {
    SCOPED_TRACE(std::string(algo::kl_estimator_name(k)));
    DistillTerm term(1.0, k, algo::AggregationOptions{});
    const auto w = term.weights(mb);
    // Column c holds token c + 1: the completion's tokens 0..3 sit in columns 1..4.
    auto logp = mb[Stream::old_logprob].clone().requires_grad_(true);
    TermSums sums;
    TermInput in{mb, logp, torch::Tensor(), torch::Tensor()};
    auto per = term.per_token(in, sums);
    per.sum().backward();
    double kl_sum = 0;
    for (int64_t b = 0; b < 2; ++b) {
      for (int64_t i = 0; i < 4; ++i) {
        const double d = static_cast<double>((*t[b])[i]) - (*s[b])[i];  // log teacher/student
        const bool keep = kept[b][i];
        const double want = !keep ? 0.0 : k == algo::KlEstimator::K1 ? -d : k == algo::KlEstimator::K2 ? 0.5 * d * d
                                                                                                     : std::expm1(d) - d;
        // d/dl of k(l, t): k1 1, k2 l - t, k3 1 - e^{t - l}.
        const double grad = !keep ? 0.0 : k == algo::KlEstimator::K1 ? 1.0 : k == algo::KlEstimator::K2 ? -d
                                                                                                   : -std::expm1(d);
        EXPECT_EQ(w[b][i + 1].item<float>(), keep ? 1.0f : 0.0f) << b << " " << i;
        // fp32: 1e-6 relative to values up to e^2.
        EXPECT_NEAR(per[b][i + 1].item<double>(), want, 1e-6 * std::max(1.0, std::abs(want))) << b << " " << i;
        EXPECT_NEAR(logp.grad()[b][i + 1].item<double>(), grad, 1e-6 * std::max(1.0, std::abs(grad))) << b << " " << i;
        if (!keep) {
          EXPECT_EQ(per[b][i + 1].item<float>(), 0.0f) << b << " " << i;
          EXPECT_EQ(logp.grad()[b][i + 1].item<float>(), 0.0f) << b << " " << i;
        }
        kl_sum += want;
      }
      EXPECT_EQ(per[b][0].item<float>(), 0.0f);  // the prompt's
      EXPECT_EQ(logp.grad()[b][0].item<float>(), 0.0f);
    }
    EXPECT_NEAR(sums.at("distill/kl"), kl_sum, 1e-5);
    if (k == algo::KlEstimator::K2) {
      // k2's gradient descends towards the verifier: up on the correct episode, down on the wrong one.
      EXPECT_LT(logp.grad()[0][1].item<float>(), 0.0f);
      EXPECT_GT(logp.grad()[1][1].item<float>(), 0.0f);
    }
  }
  EXPECT_EQ(distill_guard_names().parse("verifier_sign"), DistillGuard::VerifierSign);
  EXPECT_EQ(test::error_of([] { distill_guard_names().parse("sign"); }),
            "distill.guard must be one of none, verifier_sign (got \"sign\")");
}

// The distill term with distill.top_k: the divergence on the teacher's top-k
// tokens plus a tail bucket, the policy's buckets from the same chunks of
// logits as its token log-probs; the observation between the turns, the
// prompt and the episode without a teacher get exactly 0 and zero gradient.
TEST(LossTerms, TopKDistillTermIsTheDivergenceOnTeacherTokensOnly) {
  auto model = tiny_model(1);
  auto teacher = tiny_model(2);
  std::vector<Episode> eps = {two_turn_episode(0, 1), two_turn_episode(0, 2)};
  const int64_t k = 3;
  std::vector<std::vector<float>> lps;
  auto tops = teacher_topk(*teacher, {&eps[0]}, k, 4, &lps);
  const auto by_recompute = logprobs_of(teacher, eps[0]);  // the same numbers as recompute_logprobs, where weighted
  for (size_t t = 0; t < by_recompute.size(); ++t)
    if (eps[0].loss_weight[t] > 0) EXPECT_NEAR(lps[0][t], by_recompute[t], 1e-5) << t;
  eps[0].teacher_logprob = lps[0];
  eps[0].teacher_topk_id = tops[0].ids, eps[0].teacher_topk_logprob = tops[0].logprobs;
  std::vector<const Episode*> view = {&eps[0], &eps[1]};
  MicroBatch mb = make_micro_batch(view, torch::kCPU);
  ASSERT_TRUE(mb.has(Stream::teacher_topk_id));
  EXPECT_EQ(mb[Stream::teacher_topk_logprob].size(2), k + 1);
  for (algo::DistillDivergence d :
       {algo::DistillDivergence::ReverseKl, algo::DistillDivergence::ForwardKl, algo::DistillDivergence::Jsd}) {
    SCOPED_TRACE(std::string(algo::distill_divergence_name(d)));
    TopKDistillTerm term(0.5, d, 0.3, algo::AggregationOptions{});
    EXPECT_TRUE(term.needs_teacher_topk());
    auto w = term.weights(mb);
    EXPECT_EQ(w[1].abs().sum().item<float>(), 0.0f);
    EXPECT_EQ(w[0].sum().item<float>(), 7.0f);  // the policy's tokens of both turns, not the observation
    auto hidden = forward_micro_batch(*model, mb);
    torch::Tensor buckets;
    auto logp =
        model->token_logprobs_selected(hidden, mb[Stream::targets], mb[Stream::teacher_topk_id], &buckets, nullptr, false);
    EXPECT_TRUE(torch::allclose(logp, model->token_logprobs(hidden, mb[Stream::targets]), 1e-5, 1e-6));
    buckets.retain_grad();
    TermSums sums;
    TermInput in{mb, logp, torch::Tensor(), torch::Tensor(), buckets};
    auto per = term.per_token(in, sums);
    per.sum().backward();
    torch::NoGradGuard ng;
    auto lg = model->logits(hidden).to(torch::kFloat32);
    auto want = algo::bucket_divergence(algo::bucket_logprobs(lg, mb[Stream::teacher_topk_id]),
                                        mb[Stream::teacher_topk_logprob], d, 0.3) * (w != 0);
    EXPECT_TRUE(torch::allclose(per.detach(), want, 1e-5, 1e-6));
    EXPECT_EQ(per.detach().masked_select(w == 0).abs().max().item<float>(), 0.0f);
    EXPECT_EQ(buckets.grad().masked_select((w == 0).unsqueeze(-1).expand_as(buckets)).abs().max().item<float>(), 0.0f);
    EXPECT_GT(buckets.grad().abs().sum().item<float>(), 0.0f);
    EXPECT_NEAR(sums.at("distill/kl"), (want * w).sum().item<double>(), 1e-5);
  }
}

// Appends " [obs] " after each turn; done after 3 turns.
class ThreeTurns final : public Environment {
 public:
  std::string name() const override { return "three_turns"; }
  std::unique_ptr<EnvironmentSession> reset(const PromptExample& task, uint64_t, std::string* first) override {
    *first = task.prompt;
    return std::make_unique<S>();
  }

 private:
  struct S final : EnvironmentSession {
    EnvStep step(const PolicyTurn& t) override {
      EnvStep s;
      s.done = t.turn >= 2;
      s.observation = " Once upon a time ";
      return s;
    }
  };
};

TEST(Trainer, OnMultiTurnEpisodesTheTrainersLogprobsEqualTheRollouts) {
  test::TempDir dir;
  auto model = tiny_model(3);
  SaveOptions so;
  so.tokenizer_source = test::shared_path("models/stories260K/tok512.bin");
  save_model(*model, dir / "m", so);
  for (bool fast : {true, false}) {
    SCOPED_TRACE(fast ? "fast path" : "module path");
    Policy policy = load_policy(dir / "m", "", {});
    policy.model()->set_fast_cpu_path(fast);
    ThreeTurns env;
    EpisodeOptions eo;
    eo.max_turns = 3;
    EpisodeProducer producer(policy, env, eo);
    PromptExample t1, t2;
    t1.prompt = "Lily had a ball";
    t2.prompt = "The cat";
    SamplingParams p;
    p.max_new_tokens = 7;
    auto groups = producer.produce({&t1, &t2}, 3, p, {11, 12}, 0, nullptr);
    std::vector<Episode> eps;
    int64_t n_obs = 0;
    for (auto& g : groups)
      for (auto& e : g.episodes) {
        e.advantage.assign(e.tokens.size(), 0.0f);
        for (size_t i = 0; i < e.tokens.size(); ++i) e.advantage[i] = e.loss_weight[i] > 0 ? 0.1f : 0.0f;
        for (const auto& s : e.segments) n_obs += s.role == SegmentRole::Observation;
        eps.push_back(e);
      }
    EXPECT_GT(n_obs, 0);
    LocalReducer reducer;
    std::vector<std::unique_ptr<LossTerm>> terms;
    terms.push_back(std::make_unique<PolicyGradientTerm>(algo::PolicyLossOptions{}, algo::AggregationOptions{}));
    TrainerOptions to;
    to.micro_batch_size = 4;
    Trainer trainer(policy.model(), std::move(terms), to, reducer);
    std::vector<const Episode*> view;
    for (const auto& e : eps) view.push_back(&e);
    StepLoss st = trainer.accumulate(view);
    EXPECT_LT(st.logprob_diff_max, 2e-5);
    EXPECT_TRUE(st.finite);
  }
}

// The loss of one step as the trainer computes it.
double trainer_loss(CausalLM model, std::vector<std::unique_ptr<LossTerm>> terms, const std::vector<Episode>& eps) {
  LocalReducer reducer;
  TrainerOptions to;
  to.micro_batch_size = 1;  // several micro-batches: the normalisers must be global
  Trainer trainer(model, std::move(terms), to, reducer);
  std::vector<const Episode*> view;
  for (const auto& e : eps) view.push_back(&e);
  StepLoss st = trainer.accumulate(view);
  model->zero_grad();
  return st.loss;
}

TEST(Trainer, KlEntropyAndCrossEntropyTermsMatchHandValues) {
  auto model = tiny_model(4), ref = tiny_model(5);
  std::vector<Episode> eps = {two_turn_episode(0, 3), two_turn_episode(0, 4), two_turn_episode(1, 5)};
  for (auto& e : eps) {
    e.ref_logprob = logprobs_of(ref, e);
    std::fill(e.advantage.begin(), e.advantage.end(), 0.0f);  // the policy term contributes 0
  }
  // By hand: token-mean over every policy token of the step.
  double n = 0, k1 = 0, k2 = 0, k3 = 0, nll = 0, ent = 0;
  for (const auto& e : eps) {
    const auto lp = logprobs_of(model, e);
    // Entropy of each position's distribution from the logits.
    torch::NoGradGuard ng;
    std::vector<int64_t> ids(e.tokens.begin(), e.tokens.end());
    auto logits = model->forward(torch::tensor(ids, torch::kInt64).view({1, -1}))[0];  // [L, V]
    auto logsm = torch::log_softmax(logits.to(torch::kFloat64), -1);
    auto h = -(logsm.exp() * logsm).sum(-1);  // [L]
    for (size_t t = 1; t < e.tokens.size(); ++t) {
      if (e.loss_weight[t] <= 0) continue;
      const double d = e.ref_logprob[t] - lp[t];
      k1 += -d, k2 += 0.5 * d * d, k3 += std::exp(d) - d - 1, nll += -lp[t], ent += h[t - 1].item<double>();
      n += 1;
    }
  }
  const algo::AggregationOptions agg;
  auto with = [&](std::unique_ptr<LossTerm> extra) {
    std::vector<std::unique_ptr<LossTerm>> terms;
    terms.push_back(std::make_unique<PolicyGradientTerm>(algo::PolicyLossOptions{}, agg));
    terms.push_back(std::move(extra));
    return trainer_loss(model, std::move(terms), eps);
  };
  EXPECT_NEAR(with(std::make_unique<KlTerm>(0.5, algo::KlEstimator::K1, agg)), 0.5 * k1 / n, 1e-5);
  EXPECT_NEAR(with(std::make_unique<KlTerm>(0.5, algo::KlEstimator::K2, agg)), 0.5 * k2 / n, 1e-5);
  EXPECT_NEAR(with(std::make_unique<KlTerm>(0.5, algo::KlEstimator::K3, agg)), 0.5 * k3 / n, 1e-5);
  EXPECT_NEAR(with(std::make_unique<EntropyTerm>(0.2, agg)), -0.2 * ent / n, 1e-4);
  std::vector<std::unique_ptr<LossTerm>> ce;
  ce.push_back(std::make_unique<CrossEntropyTerm>());
  EXPECT_NEAR(trainer_loss(model, std::move(ce), eps), nll / n, 1e-4);
}

TEST(Trainer, KlInTheRewardShapesPolicyTokensOnly) {
  auto model = tiny_model(6), ref = tiny_model(7);
  Episode e = two_turn_episode(0, 9);
  e.old_logprob = logprobs_of(model, e);
  e.ref_logprob = logprobs_of(ref, e);
  for (algo::KlEstimator est : {algo::KlEstimator::K1, algo::KlEstimator::K2, algo::KlEstimator::K3}) {
    const auto pen = kl_reward_tokens(e, est, 0.25);
    for (size_t t = 0; t < e.tokens.size(); ++t) {
      if (e.loss_weight[t] == 0) {
        EXPECT_EQ(pen[t], 0.0f) << "token " << t << " is not the policy's";
        continue;
      }
      const double d = e.ref_logprob[t] - e.old_logprob[t];
      const double k = est == algo::KlEstimator::K1 ? -d : est == algo::KlEstimator::K2 ? 0.5 * d * d : std::exp(d) - d - 1;
      EXPECT_NEAR(pen[t], -0.25 * k, 1e-5);
    }
  }
}

// Records which groups each optimiser step sees (the advantage carries the group id).
class Recorder final : public LossTerm {
 public:
  std::string name() const override { return "recorder"; }
  torch::Tensor per_token(const TermInput& in, TermSums&) const override {
    auto adv = in.mb[Stream::advantage].masked_select(in.mb[Stream::loss_weight] > 0);
    for (int64_t i = 0; i < adv.numel(); ++i) seen->back().insert(static_cast<int64_t>(adv[i].item<float>()));
    count->back() += in.mb.n_sequences;
    return in.logp * 0.0;
  }
  std::vector<std::set<int64_t>>* seen = nullptr;
  std::vector<int64_t>* count = nullptr;
};

TEST(Trainer, EpochsAndMiniBatchesTakeThatManyStepsOverWholeGroups) {
  // One micro-batch per optimiser step: the first term opens a record, the recorder fills it.
  auto model = tiny_model(8);
  std::vector<Episode> eps;
  for (int64_t g = 0; g < 6; ++g)
    for (int k = 0; k < 3; ++k) {
      Episode e = two_turn_episode(g, static_cast<uint32_t>(g * 3 + k));
      for (size_t t = 0; t < e.advantage.size(); ++t) e.advantage[t] = e.loss_weight[t] > 0 ? static_cast<float>(g) : 0.f;
      eps.push_back(e);
    }
  for (auto [epochs, minis] : std::vector<std::pair<int64_t, int64_t>>{{1, 1}, {2, 3}, {3, 2}}) {
    SCOPED_TRACE(std::to_string(epochs) + " epochs x " + std::to_string(minis) + " mini-batches");
    std::vector<std::set<int64_t>> per_step;
    std::vector<int64_t> seqs;
    LocalReducer reducer;
    TrainerOptions to;
    to.epochs = epochs;
    to.mini_batches = minis;
    to.micro_batch_size = 64;  // one micro-batch per optimiser step: one record per step
    to.seed = 5;
    to.log_entropy = false;
    to.lr.kind = LrScheduleKind::Linear;
    to.lr.total_steps = epochs * minis;
    auto rec = std::make_unique<Recorder>();
    rec->seen = &per_step;
    rec->count = &seqs;
    struct Opening final : LossTerm {
      std::vector<std::set<int64_t>>* seen;
      std::vector<int64_t>* count;
      std::string name() const override { return "open"; }
      torch::Tensor per_token(const TermInput& in, TermSums&) const override {
        seen->emplace_back();
        count->push_back(0);
        return in.logp * 0.0;
      }
    };
    auto open = std::make_unique<Opening>();
    open->seen = &per_step;
    open->count = &seqs;
    std::vector<std::unique_ptr<LossTerm>> terms;
    terms.push_back(std::move(open));
    terms.push_back(std::move(rec));
    Trainer trainer(model, std::move(terms), to, reducer);
    Json m = trainer.update(eps, 3);
    EXPECT_EQ(trainer.optimizer().step_count(), epochs * minis);
    EXPECT_EQ(m["optim/steps_applied"].get<int64_t>(), epochs * minis);
    ASSERT_EQ(static_cast<int64_t>(per_step.size()), epochs * minis);
    for (int64_t e = 0; e < epochs; ++e) {
      std::multiset<int64_t> covered;
      for (int64_t b = 0; b < minis; ++b) {
        const auto& s = per_step[static_cast<size_t>(e * minis + b)];
        EXPECT_EQ(seqs[static_cast<size_t>(e * minis + b)], 3 * static_cast<int64_t>(s.size())) << "whole groups only";
        covered.insert(s.begin(), s.end());
      }
      EXPECT_EQ(covered, (std::multiset<int64_t>{0, 1, 2, 3, 4, 5})) << "every group once in epoch " << e;
    }
    model->zero_grad();
  }
}

TEST(MicroBatch, OffPolicyTokensAreReplayedOnesAndOnesSampledByOlderWeights) {
  Episode e = two_turn_episode(0, 1);
  for (auto& v : e.policy_version) v = v >= 0 ? 3 : -1;
  auto flags = [&](const Episode& x, int64_t current) {
    MicroBatch mb = make_micro_batch({&x}, torch::kCPU, current);
    return (mb[Stream::off_policy] * mb[Stream::loss_weight]).sum().item<float>();
  };
  const float n_policy = 7;
  EXPECT_EQ(flags(e, 3), 0.0f) << "sampled by the weights being updated";
  EXPECT_EQ(flags(e, 4), n_policy) << "one optimiser step later the tokens are stale";
  EXPECT_EQ(flags(e, -1), 0.0f);
  e.on_policy = false;
  EXPECT_EQ(flags(e, 3), n_policy) << "replayed episodes are off-policy whatever their version";
}

}  // namespace
}  // namespace rlf

namespace rlf {
namespace {

// The pref term through the trainer: each group's best and worst rewarded
// episode form a pair (ties and missing rewards form none), the step's loss
// is the mean pair loss whatever the micro-batch size (groups stay whole),
// the metrics are per pair, and SPPO is the mean over rows of its squared
// distance to the win-rate target. By hand from the model's log-probs.
TEST(Trainer, PreferenceTermIsTheMeanLossOverEachGroupsBestAndWorst) {
  auto model = tiny_model(21), ref = tiny_model(22);
  std::vector<Episode> eps;
  const std::vector<std::pair<int64_t, std::optional<double>>> layout = {
      {0, 1.0}, {0, 0.0},                 // a pair, chosen first
      {1, 0.0}, {1, 1.0},                 // a pair, rejected first
      {2, 0.2}, {2, 0.9}, {2, 0.5},       // best 0.9 vs worst 0.2; the 0.5 one takes no part
      {3, 0.5}, {3, 0.5},                 // a tie: no pair
      {4, std::nullopt}, {4, 1.0}};       // a missing reward: no pair
  for (size_t i = 0; i < layout.size(); ++i) {
    Episode e = two_turn_episode(layout[i].first, static_cast<uint32_t>(40 + i));
    e.reward = layout[i].second;
    e.ref_logprob = logprobs_of(ref, e);
    e.advantage.clear();
    eps.push_back(e);
  }
  auto sums = [&](size_t i) {  // (policy, reference) log-prob sums over the policy tokens
    const auto lp = logprobs_of(model, eps[i]);
    double pi = 0, r = 0;
    for (size_t t = 0; t < eps[i].tokens.size(); ++t)
      if (eps[i].loss_weight[t] > 0) pi += lp[t], r += eps[i].ref_logprob[t];
    return std::make_pair(pi, r);
  };
  const double beta = 0.7;
  const std::vector<std::pair<size_t, size_t>> pairs = {{0, 1}, {3, 2}, {5, 4}};
  double want = 0, acc = 0, margin = 0;
  for (auto [c, r] : pairs) {
    const auto [pc, rc] = sums(c);
    const auto [pr, rr] = sums(r);
    const double h = beta * ((pc - rc) - (pr - rr));
    want += std::log1p(std::exp(-h)) / pairs.size();
    acc += (h > 0 ? 1.0 : 0.0) / pairs.size();
    margin += h / pairs.size();
  }
  // One step's accumulate() with the pref term alone.
  auto accumulate = [&](const algo::PreferenceLossOptions& po, int64_t micro_batch_size) {
    LocalReducer reducer;
    TrainerOptions to;
    to.micro_batch_size = micro_batch_size;
    to.log_entropy = false;
    std::vector<std::unique_ptr<LossTerm>> terms;
    terms.push_back(std::make_unique<PreferenceTerm>(po));
    Trainer trainer(model, std::move(terms), to, reducer);
    std::vector<const Episode*> view;
    for (const auto& e : eps) view.push_back(&e);
    StepLoss st = trainer.accumulate(view);
    model->zero_grad();
    return st;
  };
  algo::PreferenceLossOptions po;
  po.beta = beta;
  for (int64_t mbs : {2, 3, 64}) {
    SCOPED_TRACE("micro_batch_size " + std::to_string(mbs));
    StepLoss st = accumulate(po, mbs);
    EXPECT_NEAR(st.loss, want, 1e-5);
    EXPECT_EQ(st.sequence_total.at("pref"), 6.0) << "three pairs, two rows each";
    EXPECT_NEAR(st.sums.at("pref/accuracy") / 6.0, acc, 1e-9);
    EXPECT_NEAR(st.sums.at("pref/margin") / 6.0, margin, 1e-4);
  }
  // SPPO: every rewarded episode of a group of two or more, target (win rate - 1/2) / beta.
  // Group 2's win rates: 0.2 -> 0, 0.9 -> 1, 0.5 -> 0.5; group 3 ties: 0.5 each; group 4 has one rewarded episode.
  const std::vector<std::pair<size_t, double>> rows = {{0, 1}, {1, 0}, {2, 0}, {3, 1}, {4, 0},
                                                       {5, 1}, {6, 0.5}, {7, 0.5}, {8, 0.5}};
  double sppo = 0;
  for (auto [i, w] : rows) {
    const auto [pi, r] = sums(i);
    sppo += std::pow(pi - r - (w - 0.5) / beta, 2) / rows.size();
  }
  po.loss = algo::PreferenceLoss::Sppo;
  EXPECT_NEAR(accumulate(po, 3).loss / sppo, 1.0, 1e-5);
}

TEST(Trainer, ValueTermIsTheClippedValueLossOnPolicyTokensByHand) {
  CausalLM base = tiny_model(4);
  CausalLM critic = make_reward_model(*base, 1, 9);
  std::vector<Episode> eps;
  for (uint32_t k = 0; k < 3; ++k) eps.push_back(two_turn_episode(k, k + 1));
  std::vector<const Episode*> view;
  for (const Episode& e : eps) view.push_back(&e);
  const auto now = recompute_values(*critic, view, 8);
  // Old values off by +-0.3 on alternate tokens (so both branches of the clip
  // occur), returns a fixed pattern; the third episode has no value targets.
  for (size_t i = 0; i < 2; ++i) {
    Episode& e = eps[i];
    e.value.resize(e.tokens.size());
    e.value_target.resize(e.tokens.size());
    for (size_t t = 0; t < e.tokens.size(); ++t) {
      e.value[t] = now[i][t] + (t % 2 ? 0.3f : -0.05f);
      e.value_target[t] = e.loss_weight[t] > 0 ? static_cast<float>(std::sin(1.0 + t + 3.0 * i)) : 0.0f;
    }
  }
  const double clip = 0.2;
  double sum = 0, n = 0, clipped = 0;
  for (size_t i = 0; i < 2; ++i)
    for (size_t t = 0; t < eps[i].tokens.size(); ++t) {
      if (eps[i].loss_weight[t] <= 0) continue;
      const double v = now[i][t], old = eps[i].value[t], r = eps[i].value_target[t];
      const double vc = old + std::clamp(v - old, -clip, clip);
      sum += 0.5 * std::max((v - r) * (v - r), (vc - r) * (vc - r));
      clipped += std::abs(v - old) > clip && (vc - r) * (vc - r) > (v - r) * (v - r);  // where the clip binds
      n += 1;
    }
  ASSERT_GT(clipped, 0);
  LocalReducer reducer;
  for (int64_t mb : {1, 2, 3}) {
    SCOPED_TRACE(mb);
    std::vector<std::unique_ptr<LossTerm>> terms;
    terms.push_back(std::make_unique<ValueTerm>(clip));
    TrainerOptions to;
    to.micro_batch_size = mb;
    to.log_entropy = false;
    Trainer trainer(critic, std::move(terms), to, reducer);
    trainer.optimizer().zero_grad();
    StepLoss st = trainer.accumulate(view);
    EXPECT_NEAR(st.term_loss.at("loss/value"), sum / n, 1e-5);
    EXPECT_EQ(st.weight_total.at("value"), n) << "only the policy tokens of episodes with value targets";
    EXPECT_NEAR(st.sums.at("value/clipfrac"), clipped, 1e-9);
    EXPECT_TRUE(critic->score->weight.grad().defined());
  }
  EXPECT_NE(test::error_of([] { ValueTerm(-0.1); }).find("value.clip"), std::string::npos);
}

TEST(MicroBatch, SplitByGroupKeepsEachGroupWhole) {
  std::vector<Episode> eps;
  for (int64_t g : {0, 1, 1, 2, 2, 2, 3}) eps.push_back(two_turn_episode(g, static_cast<uint32_t>(eps.size())));
  std::vector<const Episode*> view;
  for (const auto& e : eps) view.push_back(&e);
  for (int64_t size : {1, 2, 3, 4, 7}) {
    auto parts = split_micro_batches_by_group(view, size);
    std::map<int64_t, int> part_of;
    size_t n = 0;
    for (size_t p = 0; p < parts.size(); ++p) {
      if (parts[p].size() > static_cast<size_t>(size)) {  // only a group bigger than the size overflows, on its own
        for (const Episode* e : parts[p]) EXPECT_EQ(e->group, parts[p][0]->group) << "size " << size;
      }
      for (const Episode* e : parts[p]) {
        auto [it, fresh] = part_of.emplace(e->group, static_cast<int>(p));
        EXPECT_EQ(it->second, static_cast<int>(p)) << "group " << e->group << " split at size " << size;
        ++n;
      }
    }
    EXPECT_EQ(n, eps.size());
  }
}


// recompute_logprobs(..., FromFirstWeighted) (the reference and old-log-prob
// passes): every weighted token's log-prob equals the full pass's bit for bit,
// the tokens before its micro-batch's first weighted token are 0, and a
// micro-batch is cut at its own first weighted column.
TEST(MicroBatch, LogprobsFromTheFirstWeightedTokenEqualTheFullPass) {
  auto m = tiny_model(5);
  std::vector<Episode> eps;
  const size_t prompts[] = {7, 4, 9, 10};
  for (size_t i = 0; i < 4; ++i) {
    std::vector<int32_t> prompt, completion;
    for (size_t t = 0; t < prompts[i]; ++t) prompt.push_back(static_cast<int32_t>((31 * i + 7 * t) % 400 + 5));
    for (size_t t = 0; t < 6 + i; ++t) completion.push_back(static_cast<int32_t>((13 * i + 11 * t) % 400 + 5));
    eps.push_back(Episode::single_turn(static_cast<int64_t>(i), prompt, completion,
                                       std::vector<float>(completion.size(), -1.0f)));
  }
  std::vector<const Episode*> view;
  for (const auto& e : eps) view.push_back(&e);
  const auto full = recompute_logprobs(*m, view, 2);
  const auto cut = recompute_logprobs(*m, view, 2, LogprobScope::FromFirstWeighted);
  // micro-batches {0, 1} (first weighted token 4) and {2, 3} (9)
  const size_t first[] = {4, 4, 9, 9};
  for (size_t i = 0; i < eps.size(); ++i) {
    ASSERT_EQ(cut[i].size(), eps[i].tokens.size());
    for (size_t t = 1; t < eps[i].tokens.size(); ++t) {
      EXPECT_NE(full[i][t], 0.0f) << i << " " << t;
      if (t < first[i]) EXPECT_EQ(cut[i][t], 0.0f) << i << " " << t;
      else EXPECT_EQ(cut[i][t], full[i][t]) << i << " " << t;  // every weighted token, and the unweighted ones after
    }
  }
  // first_weighted_column: the loss weights, or-ed with every term's; a term of another shape = 0.
  auto w = torch::zeros({2, 6});
  w[1][4] = 1;
  EXPECT_EQ(first_weighted_column(w), 4);
  auto tw = torch::zeros({2, 6});
  tw[0][2] = 0.5;
  EXPECT_EQ(first_weighted_column(w, {tw}), 2);
  EXPECT_EQ(first_weighted_column(w, {torch::zeros({2, 5})}), 0);
  EXPECT_EQ(first_weighted_column(torch::zeros({2, 6})), 0);
}
}  // namespace
}  // namespace rlf

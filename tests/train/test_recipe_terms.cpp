// The recipes' loss terms inside the trainer's micro-batches (a tiny random
// model, hand-made two-turn episodes): the rollout correction multiplies the
// policy loss of rows with recomputed old log-probs by the truncated weight
// and silences sequences outside the band, leaving rows without rollout
// log-probs as they were; the nft term trains exactly the rows whose group
// has both right and wrong answers.
#include <gtest/gtest.h>

#include <cmath>

#include "model/loader.h"
#include "tests/train/run_fixtures.h"
#include "train/loss_terms.h"
#include "train/micro_batch.h"

namespace rlf {
namespace {

// prompt (3) + one policy turn (5) with advantage `adv`.
Episode episode(int64_t group, uint32_t salt, float adv) {
  Episode e;
  e.group = group;
  for (int64_t t = 0; t < 8; ++t) {
    const bool policy = t >= 3;
    e.tokens.push_back(static_cast<int32_t>((salt * 131 + 17 * t) % 500 + 5));
    e.loss_weight.push_back(policy ? 1.0f : 0.0f);
    e.old_logprob.push_back(policy ? -6.0f : 0.0f);
    e.policy_version.push_back(policy ? 0 : -1);
    e.advantage.push_back(policy ? adv : 0.0f);
  }
  e.segments = {Segment{SegmentRole::Prompt, 0, 3}, Segment{SegmentRole::Policy, 3, 8}};
  e.n_prompt = 3;
  e.n_turns = 1;
  return e;
}

struct Forward {
  torch::Tensor logp;
  MicroBatch mb;
};

Forward forward(CausalLM& model, const std::vector<Episode>& eps) {
  std::vector<const Episode*> view;
  for (const auto& e : eps) view.push_back(&e);
  Forward f{torch::Tensor(), make_micro_batch(view, torch::kCPU)};
  auto hidden = forward_micro_batch(*model, f.mb);
  f.logp = model->token_logprobs(hidden, f.mb[Stream::targets]);
  return f;
}

TEST(RecipeTerms, RolloutCorrectionWeightsRowsWithRecomputedLogprobs) {
  auto model = test::tiny_random_model(1);
  std::vector<Episode> eps = {episode(0, 1, 0.5f), episode(0, 2, -0.5f), episode(1, 3, 1.0f)};
  // Rows 0 and 1: the trainer's old log-probs are -6, the rollout's lower by log 1.5 and log 3
  // (pi_old / mu = 1.5 and 3 on every token); row 2 has no rollout log-probs of its own.
  for (int i : {0, 1}) {
    eps[i].behaviour_logprob = eps[i].old_logprob;
    for (size_t t = 3; t < 8; ++t) eps[i].behaviour_logprob[t] -= static_cast<float>(std::log(i == 0 ? 1.5 : 3.0));
  }
  const auto f = forward(model, eps);
  ASSERT_TRUE(f.mb.has(Stream::behaviour_logprob));
  algo::RolloutCorrectionOptions rc;
  rc.tis_cap = 1.2;
  rc.mask_high = 2.0;
  PolicyGradientTerm term(algo::PolicyLossOptions{}, algo::AggregationOptions{}, {}, rc);
  PolicyGradientTerm plain(algo::PolicyLossOptions{}, algo::AggregationOptions{});
  TermSums sums, plain_sums;
  TermInput in{f.mb, f.logp, torch::Tensor(), torch::Tensor()};
  const auto got = term.per_token(in, sums), want = plain.per_token(in, plain_sums);
  int64_t n = 0;
  for (int64_t t = 0; t < f.mb[Stream::loss_weight].size(1); ++t) {
    if (f.mb[Stream::loss_weight][0][t].item<float>() == 0) continue;
    ++n;
    EXPECT_NEAR(got[0][t].item<double>(), 1.2 * want[0][t].item<double>(), 1e-6) << "TIS: min(1.5, 1.2)";
    EXPECT_EQ(got[1][t].item<double>(), 0.0) << "geometric mean 3 > 2: masked";
    EXPECT_NEAR(got[2][t].item<double>(), want[2][t].item<double>(), 1e-7) << "no rollout log-probs: unchanged";
  }
  EXPECT_EQ(n, 5);
  // Sums per loss token of the rows with rollout log-probs (10 tokens): mean weight (5*1.2 + 5*0)/10,
  // all 10 above the cap, 5 in a masked sequence.
  EXPECT_NEAR(sums.at("mismatch/tis_weight_mean") / 10, 0.6, 1e-6);
  EXPECT_NEAR(sums.at("mismatch/capped_frac") / 10, 1.0, 1e-6);
  EXPECT_NEAR(sums.at("mismatch/masked_frac"), 5.0, 1e-6);
  EXPECT_NEAR(sums.at("mismatch/kl") / 10, ((0.5 - std::log(1.5)) + (2 - std::log(3.0))) / 2, 1e-5);
  // The gradient of a masked row is exactly zero.
  f.logp.retain_grad();
  got.sum().backward();
  EXPECT_EQ(f.logp.grad()[1].abs().sum().item<double>(), 0.0);
}

TEST(RecipeTerms, NftTrainsRowsOfGroupsWithBothVerdictsOnly) {
  auto model = test::tiny_random_model(2);
  std::vector<Episode> eps = {episode(0, 1, 0), episode(0, 2, 0), episode(1, 3, 0), episode(2, 4, 0)};
  eps[0].correct = true, eps[0].group_accuracy = 0.5;
  eps[1].correct = false, eps[1].group_accuracy = 0.5;
  eps[2].correct = true, eps[2].group_accuracy = 1.0;  // all right: no loss
  eps[3].group_accuracy = 0.5;                          // verdict unknown: no loss
  auto f = forward(model, eps);
  f.logp.retain_grad();
  NftTerm term(algo::NftOptions{}, algo::AggregationOptions{});
  const auto w = term.weights(f.mb);
  EXPECT_EQ(w[0].sum().item<double>(), 5.0);
  EXPECT_EQ(w[1].sum().item<double>(), 5.0);
  EXPECT_EQ(w[2].sum().item<double>(), 0.0);
  EXPECT_EQ(w[3].sum().item<double>(), 0.0);
  TermSums sums;
  TermInput in{f.mb, f.logp, torch::Tensor(), torch::Tensor()};
  const auto per = term.per_token(in, sums);
  per.sum().backward();
  // On-policy pieces (old log-prob -6 is not the model's): the rows trained have a gradient, the others none.
  EXPECT_GT(f.logp.grad()[0].abs().sum().item<double>(), 0.0);
  EXPECT_GT(f.logp.grad()[1].abs().sum().item<double>(), 0.0);
  EXPECT_EQ(f.logp.grad()[2].abs().sum().item<double>(), 0.0);
  EXPECT_EQ(f.logp.grad()[3].abs().sum().item<double>(), 0.0);
  // The positive row's loss is (1 - r_q) * -log r.
  for (int64_t t = 0; t < f.mb[Stream::loss_weight].size(1); ++t) {
    if (f.mb[Stream::loss_weight][0][t].item<float>() == 0) continue;
    const double lr = f.logp[0][t].item<double>() - f.mb[Stream::old_logprob][0][t].item<double>();
    EXPECT_NEAR(per[0][t].item<double>(), 0.5 * -std::min(lr, 10.0), 1e-5);
  }
}

}  // namespace
}  // namespace rlf

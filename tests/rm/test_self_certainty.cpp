// The reward "self_certainty" (rm/self_certainty_reward.h) on a tiny random
// policy: each sample's score is the self-certainty of that sequence alone,
// computed here from one full forward (batched and padded = each alone),
// over the policy's tokens only; a sample without ids is missing; group
// normalisation; the registry builds it from a config table.
#include <gtest/gtest.h>

#include <cmath>

#include "algorithms/entropy.h"
#include "model/loader.h"
#include "rewards/registry.h"
#include "rm/self_certainty_reward.h"
#include "tests/support/test_env.h"

namespace rlf {
namespace {

CausalLM policy_model() {
  ModelConfig c;
  c.vocab_size = 96, c.hidden_size = 32, c.intermediate_size = 64, c.num_hidden_layers = 2;
  c.num_attention_heads = 4, c.num_key_value_heads = 2, c.max_position_embeddings = 128;
  return make_random_model(c, 11, torch::kFloat32, torch::kCPU);
}

RewardSample sample(std::vector<int32_t> prompt, std::vector<int32_t> completion, std::vector<uint8_t> mask = {}) {
  RewardSample s;
  s.prompt_ids = std::move(prompt);
  s.completion_ids = std::move(completion);
  s.policy_mask = std::move(mask);
  return s;
}

// Self-certainty of one sequence, counting the positions that predict masked completion tokens.
double direct(CausalLM& m, const RewardSample& s) {
  std::vector<int64_t> seq(s.prompt_ids.begin(), s.prompt_ids.end());
  seq.insert(seq.end(), s.completion_ids.begin(), s.completion_ids.end());
  auto ids = torch::tensor(seq, torch::kInt64).view({1, -1});
  auto logits = m->forward(ids.slice(1, 0, ids.size(1) - 1));
  const int64_t T = logits.size(1), np = static_cast<int64_t>(s.prompt_ids.size());
  double sum = 0, n = 0;
  for (int64_t t = np - 1; t < T; ++t) {
    const size_t c = static_cast<size_t>(t + 1 - np);
    if (!s.policy_mask.empty() && !s.policy_mask[c]) continue;
    auto lp = torch::log_softmax(logits[0][t].to(torch::kFloat64), 0);
    sum += (-lp.mean() - std::log(static_cast<double>(logits.size(2)))).item<double>();
    n += 1;
  }
  return sum / n;
}

TEST(SelfCertaintyReward, EachScoreIsThatSequencesSelfCertaintyOverPolicyTokens) {
  torch::NoGradGuard ng;
  CausalLM m = policy_model();
  RewardGroup g;
  g.samples = {sample({1, 5, 9}, {20, 21, 22, 2}), sample({1, 5}, {30, 31, 32, 33, 34, 35, 2}),
               sample({1, 5, 9, 11}, {40, 41, 42, 43, 44}, {1, 1, 0, 0, 1}),  // an observation in the middle
               sample({}, {50, 51})};                                            // no prompt ids
  SelfCertaintyReward r(std::make_shared<CausalLM>(m), SelfCertaintyOptions{2, "none"});
  auto out = r.score(g);
  ASSERT_EQ(out.size(), 4u);
  for (size_t i = 0; i < 3; ++i) {
    ASSERT_TRUE(out[i].score) << i;
    EXPECT_NEAR(*out[i].score, direct(m, g.samples[i]), 1e-5) << i;
    EXPECT_GT(*out[i].score, 0.0);
  }
  EXPECT_FALSE(out[3].score);
  EXPECT_NE(out[3].missing_reason.find("no token ids"), std::string::npos);
  // The mask matters: all five tokens counted is another value.
  RewardGroup g2;
  g2.samples = {sample({1, 5, 9, 11}, {40, 41, 42, 43, 44})};
  EXPECT_GT(std::abs(*r.score(g2)[0].score - *out[2].score), 1e-6);
  // Group normalisation: mean 0 over the present scores.
  SelfCertaintyReward norm(std::make_shared<CausalLM>(m), SelfCertaintyOptions{4, "group"});
  auto z = norm.score(g);
  EXPECT_NEAR(*z[0].score + *z[1].score + *z[2].score, 0.0, 1e-6);
  EXPECT_FALSE(z[3].score);
}

TEST(SelfCertaintyReward, TheRegistryBuildsItAndItsErrorsNameTheOption) {
  auto slot = std::make_shared<CausalLM>(nullptr);
  RewardSet set = make_reward_set(Json::parse(R"([{"type": "self_certainty", "micro_batch_size": 2}])"), "cfg",
                                  self_certainty_factories(slot));
  RewardGroup g;
  g.samples = {sample({1, 2}, {3, 4})};
  EXPECT_NE(test::error_of([&] { set.score(g); }).find("self_certainty: needs the policy"), std::string::npos);
  *slot = policy_model();
  EXPECT_TRUE(set.score(g).results[0][0].score);
  EXPECT_NE(test::error_of([&] {
              make_reward_set(Json::parse(R"([{"type": "self_certainty", "normalize": "batch"}])"), "cfg",
                              self_certainty_factories(slot));
            }).find("option 'normalize' must be \"none\" or \"group\""),
            std::string::npos);
}

}  // namespace
}  // namespace rlf

// Multi-objective reward models: the rating term regresses each head on its
// attribute (loss and head gradient by hand); ArmoRM's gating layer learns
// prompt-dependent attribute weights that a fixed combination cannot,
// round-trips through gating.safetensors, and is what the reward
// "reward_model" applies to a directory that has one (checked against the
// prompt's own forward pass), unless `label` is given.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

#include "model/loader.h"
#include "rm/gating.h"
#include "rm/model_reward.h"
#include "rm/reward_model.h"
#include "tests/rm/rm_fixtures.h"
#include "tests/support/test_env.h"
#include "train/loss_terms.h"
#include "train/reducer.h"
#include "train/trainer.h"

namespace rlf {
namespace {


// prompt (weight 0) + response + EOS (weight 1), rated.
Episode rated_episode(const std::vector<int32_t>& prompt, std::vector<int32_t> response, std::vector<float> ratings) {
  response.push_back(2);
  Episode e = Episode::single_turn(0, prompt, response, std::vector<float>(response.size(), 0.0f));
  e.ratings = std::move(ratings);
  return e;
}

std::vector<float> last_hidden(CausalLMImpl& m, const std::vector<int32_t>& s) {
  torch::NoGradGuard ng;
  auto ids = torch::tensor(std::vector<int64_t>(s.begin(), s.end()), torch::kInt64).view({1, -1});
  auto pos = torch::arange(ids.size(1), torch::kInt64).view({1, -1});
  auto h = m.forward_hidden(ids, pos)[0][ids.size(1) - 1].contiguous();
  return std::vector<float>(h.data_ptr<float>(), h.data_ptr<float>() + h.numel());
}

TEST(RatingTerm, EachHeadRegressesItsRatedAttributeByHand) {
  CausalLM base = make_random_model(test::tiny_rm_config(), 5, torch::kFloat32, torch::kCPU);
  CausalLM rm = make_reward_model(*base, 2, 9, {"helpful", "safe"});
  EXPECT_EQ(rm->config().label_name(1), "safe");
  const std::vector<int32_t> prompt = {1, 17, 33};
  const float nan = std::nanf("");
  std::vector<Episode> eps = {rated_episode(prompt, {40, 41, 42}, {1.0f, 0.0f}),
                              rated_episode(prompt, {50, 51}, {nan, 2.0f}),
                              rated_episode(prompt, {60}, {nan, nan})};
  std::vector<std::vector<int32_t>> seqs;
  for (const Episode& e : eps) seqs.emplace_back(e.tokens.begin(), e.tokens.end() - 1);  // no EOS
  const auto s = score_sequences(*rm, seqs, 3);
  // Per rated row: mean over its rated attributes of (s - y)^2; the unrated row carries no loss.
  const double l0 = (std::pow(s[0][0] - 1.0, 2) + std::pow(s[0][1] - 0.0, 2)) / 2, l1 = std::pow(s[1][1] - 2.0, 2);
  const double loss = (l0 + l1) / 2;
  // d loss / d score.weight[k] = sum over rated rows (1/2) * 2 (s_k - y_k) / n_row * h_row.
  const auto h0 = torch::tensor(last_hidden(*rm, seqs[0])), h1 = torch::tensor(last_hidden(*rm, seqs[1]));
  const auto g0 = 0.5 * (s[0][0] - 1.0) * h0;                                    // head 0: row 0 only
  const auto g1 = 0.5 * (s[0][1] - 0.0) * h0 + 0.5 * 2.0 * (s[1][1] - 2.0) * h1;  // head 1: rows 0 and 1
  LocalReducer reducer;
  for (int64_t mb : {1, 2, 3}) {
    SCOPED_TRACE(mb);
    std::vector<std::unique_ptr<LossTerm>> terms;
    terms.push_back(std::make_unique<RatingTerm>());
    TrainerOptions to;
    to.micro_batch_size = mb;
    to.log_entropy = false;
    Trainer trainer(rm, std::move(terms), to, reducer);
    trainer.optimizer().zero_grad();
    StepLoss st = trainer.accumulate({&eps[0], &eps[1], &eps[2]});
    EXPECT_NEAR(st.term_loss.at("loss/rm_rating"), loss, 1e-5);
    EXPECT_NEAR(st.sums.at("rm/rating_mse") / st.sequence_total.at("rm_rating"), loss, 1e-5);
    const auto g = rm->score->weight.grad();
    EXPECT_LT((g[0] - g0).abs().max().item<double>(), 1e-5);
    EXPECT_LT((g[1] - g1).abs().max().item<double>(), 1e-5);
  }
}

// Pairs whose deciding attribute depends on the context: context A (feature
// e0) prefers attribute 0, context B (e1) attribute 1; the other attribute
// points the other way, so no fixed weighting gets both right.
struct GatingData {
  torch::Tensor context, chosen, rejected;
};
GatingData context_dependent_pairs(int64_t n) {
  auto gen = at::detail::createCPUGenerator(3);
  GatingData d;
  d.context = torch::zeros({n, 8});
  d.chosen = torch::zeros({n, 2});
  d.rejected = torch::zeros({n, 2});
  for (int64_t i = 0; i < n; ++i) {
    const int64_t which = i % 2;
    d.context[i][which] = 1.0;
    d.context[i][2 + (i % 5)] = 0.3;  // noise features
    const double a = 1.0 + at::rand({1}, gen)[0].item<double>(), b = 2.0 * a;
    d.chosen[i][which] = a, d.rejected[i][which] = 0.0;
    d.chosen[i][1 - which] = 0.0, d.rejected[i][1 - which] = b;
  }
  return d;
}

TEST(RewardGating, LearnsPromptDependentWeightsThatAFixedMixCannot) {
  const GatingData d = context_dependent_pairs(200);
  for (int64_t hidden : {0, 16}) {
    SCOPED_TRACE(hidden);
    GatingOptions o;
    o.hidden = hidden;
    o.steps = 400;
    o.lr = 0.05;
    RewardGating g(8, {"a", "b"}, o);
    // Fresh: uniform weights, so the pairs' rejected (larger other attribute) wins.
    EXPECT_NEAR(g.weights(d.context)[0][0].item<double>(), 0.5, 1e-6);
    const GatingFit fit = g.fit(d.context, d.chosen, d.rejected);
    EXPECT_EQ(fit.pairs, 200);
    EXPECT_LT(fit.accuracy_before, 0.1);
    EXPECT_EQ(fit.accuracy_after, 1.0);
    EXPECT_LT(fit.loss_after, fit.loss_before);
    const auto w = g.weights(d.context);
    EXPECT_GT(w[0][0].item<double>(), 0.8) << "context A weighs attribute a";
    EXPECT_GT(w[1][1].item<double>(), 0.8) << "context B weighs attribute b";
    // Round trip: the same rewards from the saved file.
    test::TempDir dir;
    g.save(dir.path());
    auto back = RewardGating::load(dir.path());
    ASSERT_TRUE(back.has_value());
    EXPECT_EQ(back->attributes(), (std::vector<std::string>{"a", "b"}));
    EXPECT_TRUE(torch::equal(back->reward(d.context, d.chosen), g.reward(d.context, d.chosen)));
  }
  test::TempDir empty;
  EXPECT_FALSE(RewardGating::load(empty.path()).has_value());
  std::ofstream(empty / kGatingFile) << "not safetensors";
  EXPECT_NE(test::error_of([&] { RewardGating::load(empty.path()); }).find(kGatingFile), std::string::npos);
  GatingOptions bad;
  bad.temperature = 0;
  EXPECT_NE(test::error_of([&] { RewardGating(8, {"a"}, bad); }).find("reward_model.gating_temperature"),
            std::string::npos);
  EXPECT_NE(test::error_of([&] { GatingOptions o; RewardGating g(8, {"a", "b"}, o); g.weights(torch::zeros({2, 7})); })
                .find("reads 8"),
            std::string::npos);
}

TEST(ModelReward, AModelWithAGatingLayerIsReadThroughItUnlessALabelIsGiven) {
  test::TempDir dir;
  ModelConfig c = ModelConfig::preset("stories260K");
  c.num_hidden_layers = 2;
  CausalLM base = make_random_model(c, 4, torch::kFloat32, torch::kCPU);
  CausalLM rm = make_reward_model(*base, 3, 21, {"x", "y", "z"});
  SaveOptions so;
  so.tokenizer_source = test::shared_path("models/stories260K/tok512.bin");
  save_model(*rm, dir / "rm", so);
  // A gating layer with non-uniform weights: fitted on random pairs.
  GatingOptions go;
  go.steps = 50;
  go.lr = 0.1;
  RewardGating g(c.hidden_size, {"x", "y", "z"}, go);
  auto gen = at::detail::createCPUGenerator(1);
  g.fit(at::randn({16, c.hidden_size}, gen), at::randn({16, 3}, gen), at::randn({16, 3}, gen));
  g.save(dir / "rm");

  RewardGroup group;
  group.prompt = "Once upon a time";
  for (const char* t : {" there was a cat.", " a dog ran to the park.", " Lily was sad."}) {
    RewardSample s;
    s.completion = t;
    group.samples.push_back(s);
  }
  const RewardFactories extra = model_reward_factories();
  RewardSet gated = make_reward_set(Json::array({{{"type", "reward_model"}, {"model", (dir / "rm").string()}}}), "cfg",
                                    extra);
  const auto got = gated.components().at(0).reward->score(group);
  Policy p = load_policy(dir / "rm", "", {});
  const auto prompt_ids = p.tokenizer->encode(group.prompt, true);
  // The gating's features: the prompt's own forward pass, last token.
  const auto context = torch::tensor(last_hidden(*p.model(), prompt_ids)).view({1, -1});
  for (size_t i = 0; i < group.samples.size(); ++i) {
    const auto seq = reward_model_tokens(*p.tokenizer, group.prompt, group.samples[i].completion, true);
    const auto s = score_sequences(*p.model(), {seq}, 1)[0];
    const auto scores = torch::tensor(std::vector<float>(s.begin(), s.end())).view({1, 3});
    ASSERT_TRUE(got[i].score.has_value()) << got[i].missing_reason;
    EXPECT_NEAR(*got[i].score, g.reward(context, scores)[0].item<double>(), 1e-5);
    // label = 1 reads that output, gating or not.
    RewardSet one = make_reward_set(
        Json::array({{{"type", "reward_model"}, {"model", (dir / "rm").string()}, {"label", 1}}}), "cfg", extra);
    EXPECT_NEAR(*one.components().at(0).reward->score(group)[i].score, s[1], 1e-6);
  }
  // The names travel in config.json's id2label.
  EXPECT_EQ(load_reward_model(dir / "rm", {}).config.label_names, (std::vector<std::string>{"x", "y", "z"}));
}

}  // namespace
}  // namespace rlf

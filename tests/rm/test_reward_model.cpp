// Reward models: what rlf saves loads in transformers as
// LlamaForSequenceClassification with the same scores (batched, padded, both
// CPU paths); the rm loss term is the Bradley-Terry loss with its gradient
// worked out by hand; the reward "reward_model" scores completions with a
// saved model; errors name the option.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

#include "algorithms/reward_model_loss.h"
#include "model/hf_dir.h"
#include "model/loader.h"
#include "rm/model_reward.h"
#include "rm/reward_model.h"
#include "tests/rm/rm_fixtures.h"
#include "tests/support/test_env.h"
#include "train/loss_terms.h"
#include "train/reducer.h"
#include "train/trainer.h"
#include "util/json_util.h"

namespace rlf {
namespace {


const std::vector<std::vector<int32_t>> kSeqs = {
    {5}, {1, 9, 23, 7, 64}, {2, 44, 81, 6, 11, 90, 33, 4, 5, 6, 7, 1}, {3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3,
                                                                         3, 3, 3, 100, 101, 102, 103, 104, 105, 7, 8, 9}};

TEST(RewardModelOracle, ScoresMatchTransformersSequenceClassification) {
  RLF_REQUIRE_ORACLE();
  test::TempDir dir;
  CausalLM base = make_random_model(test::tiny_rm_config(), 7, torch::kFloat32, torch::kCPU);
  for (int64_t labels : {1, 3}) {
    SCOPED_TRACE(labels);
    // Three outputs are a multi-objective model with named attributes (config.json's id2label).
    const std::vector<std::string> names =
        labels == 3 ? std::vector<std::string>{"helpful", "correct", "concise"} : std::vector<std::string>{};
    CausalLM rm = make_reward_model(*base, labels, 11, names);
    const auto out = dir / ("rm" + std::to_string(labels));
    save_model(*rm, out);
    // The directory is a classifier: num_labels in config.json, score.weight and no lm_head.
    HfModelDir hf(out);
    EXPECT_EQ(hf.config().architecture, "LlamaForSequenceClassification");
    EXPECT_EQ(hf.config().num_labels, labels);
    EXPECT_TRUE(hf.tensors().count("score.weight"));
    EXPECT_FALSE(hf.tensors().count("lm_head.weight"));
    std::ofstream(dir / "ids.json") << Json{{"ids", kSeqs}}.dump();
    auto r = test::run_command(test::shell_quote(test::oracle_python()) + " " +
                               test::shell_quote(test::source_path("tests/oracle/hf_reward_model.py").string()) +
                               " score " + test::shell_quote(out.string()) + " " +
                               test::shell_quote((dir / "ids.json").string()) + " " +
                               test::shell_quote((dir / "hf.json").string()));
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const Json hf_out = read_json_file((dir / "hf.json").string());
    EXPECT_EQ(hf_out["architecture"], "LlamaForSequenceClassification");
    for (int64_t k = 0; k < labels; ++k) EXPECT_EQ(hf_out["id2label"][k], rm->config().label_name(k));
    LoadedModel back = load_reward_model(out, {});
    for (bool fast : {true, false}) {
      back.model->set_fast_cpu_path(fast);
      // Micro-batches of 3: padded rows of different lengths.
      const auto ours = score_sequences(*back.model, kSeqs, 3);
      ASSERT_EQ(ours.size(), kSeqs.size());
      double err = 0;
      for (size_t i = 0; i < kSeqs.size(); ++i) {
        ASSERT_EQ(ours[i].size(), static_cast<size_t>(labels));
        for (int64_t k = 0; k < labels; ++k)
          err = std::max(err, std::abs(ours[i][k] - hf_out["scores"][i][k].get<double>()));
      }
      EXPECT_LT(err, 2e-5) << (fast ? "fast path" : "module path") << ": max |rlf - transformers| = " << err;
    }
  }
}

TEST(RewardModel, CopiesTheBackboneAndOnlyAClassifierHasAScoreHead) {
  CausalLM base = make_random_model(test::tiny_rm_config(), 7, torch::kFloat32, torch::kCPU);
  CausalLM rm = make_reward_model(*base, 2, 3);
  auto bp = base->named_parameters();
  for (const auto& p : rm->named_parameters()) {
    if (p.key() == "score.weight") {
      EXPECT_EQ(p.value().sizes(), (std::vector<int64_t>{2, 64}));
      EXPECT_NEAR(p.value().std().item<double>(), 1.0 / std::sqrt(65.0), 0.05);
      continue;
    }
    EXPECT_TRUE(torch::equal(p.value(), bp[p.key()])) << p.key();
  }
  EXPECT_FALSE(rm->named_parameters().contains("lm_head.weight"));
  EXPECT_EQ(rm->config().n_params(), base->config().n_params() - 128 * 64 + 2 * 64);
  torch::NoGradGuard ng;
  auto ids = torch::tensor({{1, 2, 3}}, torch::kInt64);
  auto pos = torch::arange(3, torch::kInt64).view({1, 3});
  auto h = rm->forward_hidden(ids, pos);
  EXPECT_NE(test::error_of([&] { rm->logits(h); }).find("cannot generate"), std::string::npos);
  EXPECT_NE(test::error_of([&] { base->scores(h); }).find("not a reward model"), std::string::npos);
  // The same backbone, seeded head: the same model twice.
  CausalLM again = make_reward_model(*base, 2, 3);
  EXPECT_TRUE(torch::equal(again->score->weight, rm->score->weight));
}

// Episodes as the rm run builds them: prompt (weight 0) + response + EOS (weight 1).
Episode pair_episode(const std::vector<int32_t>& prompt, std::vector<int32_t> response, double reward) {
  response.push_back(2);
  Episode e = Episode::single_turn(0, prompt, response, std::vector<float>(response.size(), 0.0f));
  e.reward = reward;
  return e;
}

TEST(RewardModelTerm, LossAndHeadGradientAreBradleyTerryByHand) {
  CausalLM base = make_random_model(test::tiny_rm_config(), 5, torch::kFloat32, torch::kCPU);
  CausalLM rm = make_reward_model(*base, 1, 9);
  const std::vector<int32_t> prompt = {1, 17, 33};
  const std::vector<int32_t> good = {40, 41, 42, 43}, bad = {50, 51};
  std::vector<Episode> eps = {pair_episode(prompt, good, 1.0), pair_episode(prompt, bad, 0.0)};
  // What the model reads: prompt + response, no EOS.
  std::vector<int32_t> sc = prompt, sr = prompt;
  sc.insert(sc.end(), good.begin(), good.end());
  sr.insert(sr.end(), bad.begin(), bad.end());
  const auto scores = score_sequences(*rm, {sc, sr}, 1);
  const double margin = 0.5, delta = scores[0][0] - scores[1][0];
  const double loss = std::log1p(std::exp(-(delta - margin)));
  // dL/dw = -sigmoid(-(delta - m)) * (h_c - h_r), h the final hidden state at the last token.
  torch::Tensor hc, hr;
  {
    torch::NoGradGuard ng;
    auto last_hidden = [&](const std::vector<int32_t>& s) {
      auto ids = torch::tensor(std::vector<int64_t>(s.begin(), s.end()), torch::kInt64).view({1, -1});
      auto pos = torch::arange(ids.size(1), torch::kInt64).view({1, -1});
      return rm->forward_hidden(ids, pos)[0][ids.size(1) - 1].clone();
    };
    hc = last_hidden(sc), hr = last_hidden(sr);
  }
  const auto expected_grad = -(1.0 / (1.0 + std::exp(delta - margin))) * (hc - hr);
  LocalReducer reducer;
  for (int64_t mb : {1, 2, 3}) {
    SCOPED_TRACE(mb);
    std::vector<std::unique_ptr<LossTerm>> terms;
    terms.push_back(std::make_unique<RewardModelTerm>(margin));
    TrainerOptions to;
    to.micro_batch_size = mb;
    to.log_entropy = false;
    Trainer trainer(rm, std::move(terms), to, reducer);
    trainer.optimizer().zero_grad();
    StepLoss st = trainer.accumulate({&eps[0], &eps[1]});
    EXPECT_NEAR(st.term_loss.at("loss/rm"), loss, 1e-5);
    EXPECT_NEAR(st.sums.at("rm/margin") / st.sequence_total.at("rm"), delta, 1e-5);
    EXPECT_EQ(st.sums.at("rm/accuracy") / st.sequence_total.at("rm"), delta > 0 ? 1.0 : 0.0);
    const auto g = rm->score->weight.grad().view({-1});
    EXPECT_LT((g - expected_grad).abs().max().item<double>(), 1e-5) << g << expected_grad;
    // A group whose rewards tie is no pair: no loss, no gradient.
    Episode tie = eps[1];
    tie.reward = 1.0;
    trainer.optimizer().zero_grad();
    StepLoss none = trainer.accumulate({&eps[0], &tie});
    EXPECT_EQ(none.loss, 0.0);
  }
  EXPECT_NE(test::error_of([] { RewardModelTerm(-1.0); }).find("reward_model.margin"), std::string::npos);
}

// A reward model with the real tok512 tokenizer, saved in dir/name.
std::filesystem::path saved_reward_model(const test::TempDir& dir, const std::string& name, int64_t labels) {
  ModelConfig c = ModelConfig::preset("stories260K");
  c.num_hidden_layers = 2;
  CausalLM base = make_random_model(c, 4, torch::kFloat32, torch::kCPU);
  CausalLM rm = make_reward_model(*base, labels, 21);
  SaveOptions so;
  so.tokenizer_source = test::shared_path("models/stories260K/tok512.bin");
  save_model(*rm, dir / name, so);
  return dir / name;
}

RewardGroup story_group() {
  RewardGroup g;
  g.prompt = "Once upon a time";
  for (const char* c : {" there was a cat.", " a dog ran to the park and played.", "", " Lily was sad."}) {
    RewardSample s;
    s.completion = c;
    g.samples.push_back(s);
  }
  return g;
}

TEST(ModelReward, ScoresCompletionsWithASavedRewardModel) {
  test::TempDir dir;
  const auto path = saved_reward_model(dir, "rm", 3);
  const RewardFactories extra = model_reward_factories();
  RewardSet set = make_reward_set(Json::array({{{"type", "reward_model"}, {"model", path.string()}, {"label", 2}}}),
                                  "cfg.toml", extra);
  const RewardGroup g = story_group();
  const auto results = set.components().at(0).reward->score(g);
  Policy rm = load_policy(path, "", {});
  std::vector<std::vector<int32_t>> seqs;
  for (const auto& s : g.samples) seqs.push_back(reward_model_tokens(*rm.tokenizer, g.prompt, s.completion, true));
  const auto expected = score_sequences(*rm.model(), seqs, 7);
  ASSERT_EQ(results.size(), 4u);
  for (size_t i = 0; i < 4; ++i) {
    ASSERT_TRUE(results[i].score.has_value()) << results[i].missing_reason;
    EXPECT_NEAR(*results[i].score, expected[i][2], 1e-6);
  }
  // A completion longer than the model's context is a missing score; the others are still scored.
  RewardGroup longer = g;
  std::string many;
  for (int i = 0; i < 400; ++i) many += " a cat";
  longer.samples[1].completion = many;
  const auto cut = set.components().at(0).reward->score(longer);
  EXPECT_FALSE(cut[1].score.has_value());
  EXPECT_NE(cut[1].missing_reason.find("more than the reward model's context of 512"), std::string::npos)
      << cut[1].missing_reason;
  EXPECT_NEAR(*cut[0].score, expected[0][2], 1e-6);
  // A direction over the outputs (DPA), and group normalisation.
  RewardSet dir_set = make_reward_set(
      Json::array({{{"type", "reward_model"}, {"model", path.string()}, {"direction", {0.5, -1.0, 2.0}},
                    {"normalize", "group"}}}),
      "cfg.toml", extra);
  const auto d = dir_set.components().at(0).reward->score(g);
  std::vector<double> raw;
  for (size_t i = 0; i < 4; ++i) raw.push_back(0.5 * expected[i][0] - expected[i][1] + 2.0 * expected[i][2]);
  double mean = 0, var = 0;
  for (double v : raw) mean += v / 4;
  for (double v : raw) var += (v - mean) * (v - mean) / 4;
  for (size_t i = 0; i < 4; ++i) EXPECT_NEAR(*d[i].score, (raw[i] - mean) / (std::sqrt(var) + 1e-6), 1e-4);
}

TEST(ModelReward, ErrorsNameTheOption) {
  test::TempDir dir;
  const auto path = saved_reward_model(dir, "rm", 2);
  const RewardFactories extra = model_reward_factories();
  auto error = [&](Json table) {
    table["type"] = "reward_model";
    return test::error_of([&] { make_reward_set(Json::array({table}), "cfg.toml", extra); });
  };
  EXPECT_NE(error(Json::object()).find("option 'model' is required"), std::string::npos);
  EXPECT_NE(error({{"model", (dir / "nope").string()}}).find("not a model directory"), std::string::npos);
  EXPECT_NE(error({{"model", path.string()}, {"label", 2}}).find("option 'label' = 2 but the model has 2 output(s)"),
            std::string::npos);
  EXPECT_NE(error({{"model", path.string()}, {"direction", {1.0}}}).find("option 'direction' has 1 weights"),
            std::string::npos);
  EXPECT_NE(error({{"model", path.string()}, {"normalize", "batch"}}).find("option 'normalize'"), std::string::npos);
  EXPECT_NE(error({{"model", path.string()}, {"modle", 1}}).find("modle"), std::string::npos);
  // A causal LM is not a reward model.
  ModelConfig c = ModelConfig::preset("stories260K");
  c.num_hidden_layers = 1;
  SaveOptions so;
  so.tokenizer_source = test::shared_path("models/stories260K/tok512.bin");
  save_model(*make_random_model(c, 1, torch::kFloat32, torch::kCPU), dir / "lm", so);
  EXPECT_NE(error({{"model", (dir / "lm").string()}}).find("is a LlamaForCausalLM, not a reward model"), std::string::npos);
  // Without the extra factories (a torch-free program) the type is unknown.
  EXPECT_NE(test::error_of([&] {
              make_reward_set(Json::array({{{"type", "reward_model"}, {"model", path.string()}}}), "cfg.toml");
            }).find("unknown reward type 'reward_model'"),
            std::string::npos);
}

}  // namespace
}  // namespace rlf

// Process reward models: step ends are found on token ids (a char tokenizer
// by hand, a SentencePiece one by the decoded-text property); a saved PRM's
// step scores are what transformers' LlamaForSequenceClassification gives
// the solution cut after each step; the reward "process_reward" places the
// bounded step rewards on the steps' last tokens (none, clip, delta), or
// sums them into the score, and errors name the option.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

#include "model/loader.h"
#include "rm/model_reward.h"
#include "rm/process_reward.h"
#include "rm/reward_model.h"
#include "tests/support/test_env.h"
#include "tokenizer/char_vocab.h"
#include "util/json_util.h"

namespace rlf {
namespace {

int count(const std::string& text, const std::string& d) {
  int n = 0;
  for (size_t at = text.find(d); at != std::string::npos; at = text.find(d, at + d.size())) ++n;
  return n;
}

TEST(StepEnds, AStepEndsAtTheTokenThatCompletesTheDelimiter) {
  test::TempDir dir;
  write_char_tokenizer(dir.path(), printable_ascii());
  const auto chars = load_tokenizer(dir.path().string());
  // "ab; cd; e": the spaces after ';' (indices 3 and 7) complete "; ", the last token ends the last step.
  EXPECT_EQ(step_end_positions(*chars, chars->encode("ab; cd; e"), "; "), (std::vector<int64_t>{3, 7, 8}));
  // A trailing delimiter ends its step once; no empty last step.
  EXPECT_EQ(step_end_positions(*chars, chars->encode("ab; cd; "), "; "), (std::vector<int64_t>{3, 7}));
  EXPECT_EQ(step_end_positions(*chars, chars->encode("abc"), "; "), (std::vector<int64_t>{2}));
  EXPECT_TRUE(step_end_positions(*chars, {}, "; ").empty());
  // A sampled EOS (special: no text) ends no step: the same ends as without it.
  auto with_eos = chars->encode("ab; cd; e");
  with_eos.push_back(*chars->eos_id());
  EXPECT_EQ(step_end_positions(*chars, with_eos, "; "), (std::vector<int64_t>{3, 7, 8}));
  // SentencePiece pieces may hold several characters: the property holds on the decoded text.
  const auto sp = load_tokenizer(test::shared_path("models/stories260K/tok512.bin").string());
  for (const std::string text : {"Tom ran to the park. Lily sat. The end", "A cat. A dog.", "no delimiter here"}) {
    SCOPED_TRACE(text);
    const auto ids = sp->encode(text);
    // Independently: a token is an end when the decoded prefix gains a ".", and the last token is one
    // when text follows the last ".".
    std::vector<int64_t> expected;
    std::string prefix;
    for (size_t i = 0; i < ids.size(); ++i) {
      const int before = count(prefix, ".");
      prefix += sp->token_bytes(ids[i]);
      if (count(prefix, ".") > before) expected.push_back(static_cast<int64_t>(i));
    }
    const size_t last_dot = prefix.rfind('.');
    const bool tail = last_dot == std::string::npos || last_dot + 1 < prefix.size();
    if (tail && (expected.empty() || expected.back() != static_cast<int64_t>(ids.size()) - 1))
      expected.push_back(static_cast<int64_t>(ids.size()) - 1);
    EXPECT_EQ(step_end_positions(*sp, ids, "."), expected);
  }
}

ModelConfig prm_config() {
  ModelConfig c = ModelConfig::preset("stories260K");
  c.num_hidden_layers = 2;
  return c;
}

std::filesystem::path saved_prm(const test::TempDir& dir, const std::string& name) {
  CausalLM base = make_random_model(prm_config(), 4, torch::kFloat32, torch::kCPU);
  CausalLM prm = make_reward_model(*base, 1, 33);
  SaveOptions so;
  so.tokenizer_source = test::shared_path("models/stories260K/tok512.bin");
  save_model(*prm, dir / name, so);
  return dir / name;
}

TEST(ProcessRewardOracle, StepScoresAreTransformersScoresOfTheSolutionCutAfterEachStep) {
  RLF_REQUIRE_ORACLE();
  test::TempDir dir;
  const auto path = saved_prm(dir, "prm");
  Policy p = load_policy(path, "", {});
  StepExample ex;
  ex.prompt = "Once upon a time";
  ex.steps = {" there was a cat", " the cat ran to the park", " the end"};
  ex.labels = {1, 1, 0};
  ex.where = "test";
  const ProcessInput in = process_input(*p.tokenizer, ex, ".", true);
  ASSERT_EQ(in.ends.size(), 3u);
  Json prefixes = Json::array();
  for (int64_t e : in.ends) prefixes.push_back(std::vector<int32_t>(in.tokens.begin(), in.tokens.begin() + e + 1));
  std::ofstream(dir / "ids.json") << Json{{"ids", prefixes}}.dump();
  auto r = test::run_command(test::shell_quote(test::oracle_python()) + " " +
                             test::shell_quote(test::source_path("tests/oracle/hf_reward_model.py").string()) +
                             " score " + test::shell_quote(path.string()) + " " +
                             test::shell_quote((dir / "ids.json").string()) + " " +
                             test::shell_quote((dir / "hf.json").string()));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const Json hf = read_json_file((dir / "hf.json").string());
  const auto ours = step_probabilities(*p.model(), {in.tokens}, {in.ends}, 4);
  ASSERT_EQ(ours.size(), 1u);
  for (size_t k = 0; k < 3; ++k) {
    const double z = hf["scores"][k][0].get<double>();
    EXPECT_NEAR(ours[0][k], 1.0 / (1.0 + std::exp(-z)), 2e-6) << "step " << k;
  }
  // Tokens that do not give one end per step (here a step holding the delimiter) are an error naming the example.
  ex.steps = {" one. two", " three"};
  ex.labels = {1, 1};
  EXPECT_NE(test::error_of([&] { process_input(*p.tokenizer, ex, ".", true); }).find("test: the solution's tokens give 3"),
            std::string::npos);
}

TEST(ProcessReward, BoundedStepRewardsLandOnTheStepsLastTokens) {
  test::TempDir dir;
  const auto path = saved_prm(dir, "prm");
  Policy p = load_policy(path, "", {});
  RewardGroup g;
  g.prompt = "Once upon a time";
  const std::vector<std::string> texts = {" there was a cat. It ran. It sat", " a dog. The end.", " no steps at all"};
  for (const std::string& t : texts) {
    RewardSample s;
    s.completion = t;
    s.prompt_ids = p.tokenizer->encode(g.prompt, true);
    s.completion_ids = p.tokenizer->encode(t);
    g.samples.push_back(s);
  }
  // Expected p_k: the classifier's last-token score of the prompt + completion cut after each step.
  std::vector<std::vector<double>> expected;
  std::vector<std::vector<int64_t>> ends;
  for (const RewardSample& s : g.samples) {
    ends.push_back(step_end_positions(*p.tokenizer, s.completion_ids, "."));
    std::vector<double> ps;
    for (int64_t e : ends.back()) {
      std::vector<int32_t> seq = s.prompt_ids;
      seq.insert(seq.end(), s.completion_ids.begin(), s.completion_ids.begin() + e + 1);
      ps.push_back(1.0 / (1.0 + std::exp(-static_cast<double>(score_sequences(*p.model(), {seq}, 1)[0][0]))));
    }
    expected.push_back(ps);
  }
  ASSERT_EQ(ends[0].size(), 3u);
  ASSERT_EQ(ends[1].size(), 2u);
  const RewardFactories extra = model_reward_factories();
  for (const std::string bounding : {"none", "clip", "delta"}) {
    SCOPED_TRACE(bounding);
    RewardSet set = make_reward_set(Json::array({{{"type", "process_reward"},
                                                  {"model", path.string()},
                                                  {"delimiter", "."},
                                                  {"bounding", bounding},
                                                  {"clip_threshold", 0.6}}}),
                                    "cfg", extra);
    const auto out = set.components().at(0).reward->score(g);
    for (size_t i = 0; i < 2; ++i) {
      ASSERT_TRUE(out[i].score.has_value()) << out[i].missing_reason;
      EXPECT_EQ(*out[i].score, 0.0) << "the rewards live in token_rewards, counted once";
      ASSERT_EQ(out[i].token_rewards.size(), g.samples[i].completion_ids.size());
      const auto r = algo::bound_step_rewards(expected[i], algo::parse_step_bounding(bounding), 0.6);
      double nonzero_sum = 0;
      for (size_t k = 0; k < ends[i].size(); ++k)
        EXPECT_NEAR(out[i].token_rewards[static_cast<size_t>(ends[i][k])], r[k], 1e-5) << "step " << k;
      for (float v : out[i].token_rewards) nonzero_sum += v;
      double r_sum = 0;
      for (double v : r) r_sum += v;
      EXPECT_NEAR(nonzero_sum, r_sum, 1e-5) << "nothing off the step ends";
    }
    // A completion without a delimiter is one step: its last token.
    ASSERT_EQ(ends[2].size(), 1u);
  }
  // placement = "outcome": the sum of the bounded rewards as the score, no per-token rewards.
  RewardSet outcome = make_reward_set(Json::array({{{"type", "process_reward"},
                                                    {"model", path.string()},
                                                    {"delimiter", "."},
                                                    {"bounding", "delta"},
                                                    {"placement", "outcome"}}}),
                                      "cfg", extra);
  const auto o = outcome.components().at(0).reward->score(g);
  EXPECT_NEAR(*o[0].score, expected[0][0], 1e-5) << "delta telescopes to p_1";
  EXPECT_TRUE(o[0].token_rewards.empty());
  // Multi-turn: steps ending on tokens the policy did not write earn nothing.
  RewardGroup masked = g;
  masked.samples.resize(1);
  masked.samples[0].policy_mask.assign(masked.samples[0].completion_ids.size(), 1);
  masked.samples[0].policy_mask[static_cast<size_t>(ends[0][1])] = 0;
  RewardSet none = make_reward_set(Json::array({{{"type", "process_reward"},
                                                 {"model", path.string()},
                                                 {"delimiter", "."},
                                                 {"bounding", "none"}}}),
                                   "cfg", extra);
  const auto m = none.components().at(0).reward->score(masked);
  EXPECT_EQ(m[0].token_rewards[static_cast<size_t>(ends[0][1])], 0.0f);
  EXPECT_GT(m[0].token_rewards[static_cast<size_t>(ends[0][0])], 0.0f);
  // Without token ids the text is tokenized by the PRM: the same tokens here, the same rewards.
  RewardGroup text = g;
  for (RewardSample& s : text.samples) s.prompt_ids.clear(), s.completion_ids.clear();
  const auto t = none.components().at(0).reward->score(text);
  const auto ids = none.components().at(0).reward->score(g);
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(t[i].token_rewards, ids[i].token_rewards);
  // A token outside the PRM's vocabulary: missing, with the reason.
  RewardGroup alien = g;
  alien.samples.resize(1);
  alien.samples[0].completion_ids.push_back(100000);
  const auto a = none.components().at(0).reward->score(alien);
  EXPECT_FALSE(a[0].score.has_value());
  EXPECT_NE(a[0].missing_reason.find("must share the policy's tokenizer"), std::string::npos);
}

TEST(ProcessReward, ErrorsNameTheOption) {
  test::TempDir dir;
  const auto path = saved_prm(dir, "prm");
  const RewardFactories extra = model_reward_factories();
  auto error = [&](Json table) {
    table["type"] = "process_reward";
    return test::error_of([&] { make_reward_set(Json::array({table}), "cfg.toml", extra); });
  };
  EXPECT_NE(error(Json::object()).find("option 'model' is required"), std::string::npos);
  EXPECT_NE(error({{"model", path.string()}, {"bounding", "cap"}}).find("option 'bounding'"), std::string::npos);
  EXPECT_NE(error({{"model", path.string()}, {"placement", "end"}}).find("option 'placement'"), std::string::npos);
  EXPECT_NE(error({{"model", path.string()}, {"delimiter", ""}}).find("option 'delimiter'"), std::string::npos);
  EXPECT_NE(error({{"model", (dir / "none").string()}}).find("not a model directory"), std::string::npos);
  EXPECT_NE(error({{"model", path.string()}, {"bounds", 1}}).find("bounds"), std::string::npos);
}

}  // namespace
}  // namespace rlf

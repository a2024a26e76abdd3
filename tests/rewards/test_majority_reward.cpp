// The label-free reward "majority" (TTRL): the pseudo-label is the largest
// cluster of equivalent answers; ties, missing answers, min_share and the
// registry's option errors.
#include <gtest/gtest.h>

#include "rewards/majority_reward.h"
#include "rewards/registry.h"
#include "tests/support/test_env.h"

namespace rlf {
namespace {

using test::error_of;

RewardGroup group_of(const std::vector<std::string>& completions) {
  RewardGroup g;
  g.prompt = "What is 6 * 7?";
  for (const std::string& c : completions) {
    RewardSample s;
    s.completion = c;
    g.samples.push_back(s);
  }
  return g;
}

std::vector<double> scores(Reward& r, const RewardGroup& g) {
  std::vector<double> out;
  for (const RewardResult& x : r.score(g)) out.push_back(x.score ? *x.score : -1.0);
  return out;
}

TEST(MajorityReward, TheLargestClusterOfEquivalentAnswersIsThePseudoLabel) {
  MajorityReward r;
  // 42 three times (one as 42.0), 41 twice, one without an answer: 42 wins.
  const auto g = group_of({"#### 42", "#### 41", "The answer is 42.0", "no idea", "#### 41", "#### 42"});
  EXPECT_EQ(scores(r, g), (std::vector<double>{1, 0, 1, 0, 0, 1}));
  const auto results = r.score(g);
  EXPECT_EQ(results[1].explanation, "differs from the majority answer 42 (3 of 6 votes)");
  EXPECT_EQ(results[3].explanation, "has no answer; not the majority answer 42 (3 of 6 votes)");
  // No reference is read: a record without one is fine.
  EXPECT_NO_THROW(r.check_record(Json::object(), "", "x.jsonl:1"));
}

TEST(MajorityReward, TiesGoToTheAnswerSeenFirst) {
  MajorityReward r;
  EXPECT_EQ(scores(r, group_of({"#### 5", "#### 7", "#### 7", "#### 5"})), (std::vector<double>{1, 0, 0, 1}));
  EXPECT_EQ(scores(r, group_of({"#### 7", "#### 5", "#### 5", "#### 7"})), (std::vector<double>{1, 0, 0, 1}));
}

TEST(MajorityReward, NoAnswerOrTooSmallAMajorityGivesNoPseudoLabel) {
  MajorityRewardOptions gsm8k;
  gsm8k.answer_format = "gsm8k";
  MajorityReward r(gsm8k);
  for (const auto& x : r.score(group_of({"hmm", "no idea"}))) {
    EXPECT_FALSE(x.score.has_value());
    EXPECT_NE(x.missing_reason.find("no completion of the group has an answer"), std::string::npos);
  }
  MajorityRewardOptions o;
  o.min_share = 0.5;
  o.correct_score = 2.0;
  o.incorrect_score = -1.0;
  MajorityReward strict(o);
  // 2 of 5 < 0.5: missing; 3 of 5: scored with the configured values.
  for (const auto& x : strict.score(group_of({"#### 1", "#### 1", "#### 2", "#### 3", "#### 4"})))
    EXPECT_NE(x.missing_reason.find("2 of 5 votes, below min_share 0.5"), std::string::npos);
  EXPECT_EQ(scores(strict, group_of({"#### 1", "#### 1", "#### 2", "#### 1", "#### 4"})),
            (std::vector<double>{2, 2, -1, 2, -1}));
}

TEST(MajorityReward, BuiltByTheRegistryWithOptionErrors) {
  auto r = make_reward("majority", Json{{"answer_format", "gsm8k"}}, "cfg.toml [[reward]] #1");
  EXPECT_EQ(r->name(), "majority");
  EXPECT_NE(error_of([] { make_reward("majority", Json{{"min_share", 2}}, "cfg.toml"); }).find("option 'min_share'"),
            std::string::npos);
  EXPECT_NE(error_of([] { make_reward("majority", Json{{"answer_format", "xml"}}, "cfg.toml"); }).find("xml"),
            std::string::npos);
  EXPECT_NE(error_of([] { make_reward("majority", Json{{"min_shar", 0.5}}, "cfg.toml"); }).find("min_shar"),
            std::string::npos);
}

}  // namespace
}  // namespace rlf

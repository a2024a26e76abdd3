// maj@k on hand-made groups: clustering by math equivalence, block votes,
// ties, abstentions, undefined k.
#include <gtest/gtest.h>

#include "rewards/math/majority_vote.h"
#include "util/error.h"

namespace rlf {
namespace {

using Answers = std::vector<std::optional<std::string>>;

TEST(MajorityVote, ClustersEquivalentAnswers) {
  const Answers answers = {"0.5", "\\frac{1}{2}", "42", std::nullopt, "1/2", "42.0", "41"};
  EXPECT_EQ(cluster_answers(answers), (std::vector<int>{0, 0, 1, kNoAnswer, 0, 1, 2}));
  EXPECT_TRUE(cluster_answers({}).empty());
}

TEST(MajorityVote, ExtractsAnswersLikeTheMathReward) {
  const auto answers = extract_answers({"so 3 + 4 = 7. #### 7", "The answer is \\boxed{\\frac{1}{2}}.", "no idea"},
                                       math::AnswerFormat::Auto);
  ASSERT_EQ(answers.size(), 3u);
  EXPECT_EQ(answers[0], "7");
  EXPECT_EQ(answers[1], "\\frac{1}{2}");
  EXPECT_EQ(answers[2], std::nullopt);
}

TEST(MajorityVote, OneBlockMajorityWins) {
  // 42, 42, 41, (none): 42 has two votes and is correct.
  const std::vector<int> clusters = {0, 0, 1, kNoAnswer};
  EXPECT_EQ(majority_at_k(clusters, {true, true, false, false}, 4), 1.0);
  // The same votes where 42 is wrong (and the minority right): the vote is wrong.
  EXPECT_EQ(majority_at_k(clusters, {false, false, true, false}, 4), 0.0);
}

TEST(MajorityVote, BlocksOfKAreAveraged) {
  // k = 2 cuts 6 samples into [0,1] [2,3] [4,5].
  const std::vector<int> clusters = {0, 0, 1, kNoAnswer, 1, 0};
  const std::vector<bool> correct = {true, true, false, false, false, true};
  // [0,0] -> 0 correct; [1,-] -> 1 wrong; [1,0] tie, first (1) wins -> wrong.
  EXPECT_NEAR(*majority_at_k(clusters, correct, 2), 1.0 / 3.0, 1e-15);
  // k = 4: one block [0,0,1,-] (the remainder [1,0] is dropped) -> correct.
  EXPECT_EQ(majority_at_k(clusters, correct, 4), 1.0);
  // k = 3: [0,0,1] -> correct; [-,1,0] tie 1 first -> wrong.
  EXPECT_EQ(majority_at_k(clusters, correct, 3), 0.5);
  // k = 1: each sample alone; the abstaining one is wrong.
  EXPECT_NEAR(*majority_at_k(clusters, correct, 1), 3.0 / 6.0, 1e-15);
}

TEST(MajorityVote, TiesGoToTheFirstCluster) {
  EXPECT_EQ(majority_at_k({0, 1}, {false, true}, 2), 0.0);
  EXPECT_EQ(majority_at_k({1, 0}, {true, false}, 2), 1.0);
  // 3 votes against 2 beats order.
  EXPECT_EQ(majority_at_k({0, 1, 1, 0, 1}, {true, false, false, true, false}, 5), 0.0);
}

TEST(MajorityVote, NoAnswersAndTooFewSamples) {
  EXPECT_EQ(majority_at_k({kNoAnswer, kNoAnswer}, {true, true}, 2), 0.0);  // nobody voted
  EXPECT_EQ(majority_at_k({0, 0, 0}, {true, true, true}, 4), std::nullopt);  // n < k: undefined
}

TEST(MajorityVote, RejectsBadArguments) {
  try {
    majority_at_k({0, 1}, {true}, 1);
    FAIL();
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "majority_at_k: 2 cluster ids but 1 correctness flags");
  }
  try {
    majority_at_k({0}, {true}, 0);
    FAIL();
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "majority_at_k: k = 0 must be >= 1");
  }
}

}  // namespace
}  // namespace rlf

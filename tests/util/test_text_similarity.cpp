#include "util/text_similarity.h"
#include "util/strings.h"

#include <gtest/gtest.h>

#include "tests/support/test_env.h"

namespace rlf {
namespace {

TEST(TextSimilarity, WordsSplitAlphanumericRunsAndSymbols) {
  EXPECT_EQ(text_words("What is 12+7?"), (std::vector<std::string>{"what", "is", "12", "+", "7", "?"}));
  EXPECT_EQ(text_words("  Tom's  dog\n"), (std::vector<std::string>{"tom", "'", "s", "dog"}));
  EXPECT_EQ(text_words("naïve café"), (std::vector<std::string>{"naïve", "café"}));
  EXPECT_TRUE(text_words(" \t\n").empty());
}

// Hand-counted sets: a = {the cat, cat sat}, b = {the cat, cat ran, ran off}.
TEST(TextSimilarity, ContainmentAndJaccardByHand) {
  EXPECT_DOUBLE_EQ(ngram_containment("the cat sat", "The cat ran off", 2), 0.5);
  EXPECT_DOUBLE_EQ(ngram_containment("The cat ran off", "the cat sat", 2), 1.0 / 3.0);
  EXPECT_DOUBLE_EQ(ngram_jaccard("the cat sat", "The cat ran off", 2), 1.0 / 4.0);
  EXPECT_DOUBLE_EQ(ngram_jaccard("the cat sat", "The cat ran off", 1), 2.0 / 5.0);  // {the,cat,sat} vs {the,cat,ran,off}
  // Repeats count once; identical texts are 1; no n-grams at all is 0.
  EXPECT_DOUBLE_EQ(ngram_containment("a a a b", "a b", 1), 1.0);
  EXPECT_DOUBLE_EQ(ngram_jaccard("x y z", "x y z", 3), 1.0);
  EXPECT_DOUBLE_EQ(ngram_containment("x y", "x y", 3), 0.0);
  EXPECT_DOUBLE_EQ(ngram_jaccard("", "", 1), 0.0);
  EXPECT_EQ(test::error_of([] { ngram_jaccard("a", "b", 0); }), "n-gram order must be >= 1 (got 0)");
}

TEST(Strings, ReplaceAllLeftToRightWithoutRescanning) {
  EXPECT_EQ(replace_all("{a} and {a}", "{a}", "x"), "x and x");
  EXPECT_EQ(replace_all("{a}", "{a}", "{a}{a}"), "{a}{a}");  // inserted text is not searched again
  EXPECT_EQ(replace_all("aaa", "aa", "b"), "ba");
  EXPECT_EQ(replace_all("abc", "", "x"), "abc");
}

}  // namespace
}  // namespace rlf

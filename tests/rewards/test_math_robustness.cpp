// Hostile inputs: the verifier never crashes, never hangs, and answers
// "not equivalent" with a reason.
#include <gtest/gtest.h>

#include "rewards/math/math_verify.h"

namespace rlf::math {
namespace {

// Runs one verification and checks it gave a reason. No call is timed: a
// hang fails at the suite's CTest timeout (180 s; the suite takes well under
// a second), and the reasons show the limits at work.
MathVerdict verify_bounded(const std::string& prediction, const std::string& reference) {
  MathVerdict v = verify_math(prediction, reference);
  EXPECT_FALSE(v.reason.empty());
  return v;
}

TEST(MathRobustness, DeeplyNestedBraces) {
  std::string deep = std::string(100000, '{') + "1" + std::string(100000, '}');
  const MathVerdict boxed = verify_bounded("\\boxed{" + deep + "}", "2");
  EXPECT_FALSE(boxed.correct);
  // Over the parser's limits the answer is compared as text, never parsed.
  EXPECT_NE(boxed.reason.find("text vs expression"), std::string::npos) << boxed.reason;
  EXPECT_FALSE(verify_bounded(deep, "2").correct);
  EXPECT_TRUE(verify_bounded(deep, "1").correct);  // prose fallback: the last number in the text is 1
  EXPECT_FALSE(math_equal(deep, "1"));             // as an answer it is over the size limits
  std::string parens = std::string(50000, '(') + "1" + std::string(50000, ')');
  EXPECT_FALSE(verify_bounded(parens, "2").correct);
  EXPECT_FALSE(math_equal(parens, "1"));
  std::string unclosed = "\\boxed{" + std::string(100000, '(');
  EXPECT_FALSE(verify_bounded(unclosed, "1").correct);
  std::string fracs;
  for (int i = 0; i < 5000; ++i) fracs += "\\frac{1}{";
  fracs += "2";
  fracs.append(5000, '}');
  EXPECT_FALSE(verify_bounded("$" + fracs + "$", "1").correct);
}

TEST(MathRobustness, ModerateNestingStillWorks) {
  std::string nested = std::string(20, '(') + "1/2" + std::string(20, ')');
  EXPECT_TRUE(math_equal(nested, "0.5"));
  std::string sum = "1";
  for (int i = 0; i < 30; ++i) sum = "(" + sum + "+1)";
  EXPECT_TRUE(math_equal(sum, "31"));
  std::string frac = "x";
  for (int i = 0; i < 15; ++i) frac = "\\frac{" + frac + "}{2}";
  EXPECT_TRUE(math_equal(frac, "x/32768"));
}

TEST(MathRobustness, HugeNumbers) {
  std::string reason;
  EXPECT_FALSE(math_equal("2^{99999}", "2^{99999}", &reason));
  EXPECT_EQ(reason, "value is undefined or too large: inf vs inf");
  EXPECT_FALSE(math_equal("2^{99999}", "2^{99998}"));
  EXPECT_FALSE(math_equal("10^{10^{10}}", "1"));
  EXPECT_FALSE(math_equal("1000!", "1000!"));
  EXPECT_FALSE(math_equal(std::string(5000, '9'), "1"));
  EXPECT_TRUE(math_equal("2^{62}", "4611686018427387904"));  // still exact at the 64-bit edge
  EXPECT_TRUE(math_equal("2^{-3}", "0.125"));
  EXPECT_FALSE(math_equal("x^{99999}", "x^{99998}"));
  EXPECT_FALSE(verify_bounded("1e999999", "1").correct);
}

TEST(MathRobustness, DivisionByZeroAndDomainErrors) {
  std::string reason;
  EXPECT_FALSE(math_equal("1/0", "1/0", &reason));
  EXPECT_EQ(reason, "value is undefined or too large: nan vs nan");
  EXPECT_FALSE(math_equal("\\frac{1}{0}", "\\infty"));
  EXPECT_FALSE(math_equal("0/0", "0"));
  EXPECT_FALSE(math_equal("\\sqrt{-1}", "\\sqrt{-1}"));
  EXPECT_FALSE(math_equal("\\log 0", "0"));
  EXPECT_FALSE(math_equal("0^0", "1"));
  EXPECT_FALSE(math_equal("\\frac{1}{x-x}", "\\frac{1}{x-x}"));
}

TEST(MathRobustness, MalformedLatex) {
  for (const char* bad : {"\\frac{1}{", "\\frac", "\\sqrt", "{{{", "}}}", "\\boxed{", "\\left(", "(((", "1+", "*2",
                          "\\begin{pmatrix}", "\\end{pmatrix}", "^^^", "\\", "$$$", "\\text{", "_", "\\frac{}{}",
                          "1,,2", "\\{", "\\}", "(,)", "[", "|", "||", "\\cup", "x=", "=5", "\\pm", "1 2 3"}) {
    MathVerdict v = verify_bounded(bad, "5");
    EXPECT_FALSE(v.correct) << bad;
    verify_bounded("5", bad);
    verify_bounded(bad, bad);
  }
}

TEST(MathRobustness, EmptyAndWhitespace) {
  std::string reason;
  EXPECT_FALSE(math_equal("", "", &reason));
  EXPECT_EQ(reason, "empty reference answer");
  EXPECT_FALSE(math_equal("", "1", &reason));
  EXPECT_EQ(reason, "empty answer");
  MathVerdict v = verify_math("", "1");
  EXPECT_FALSE(v.correct);
  EXPECT_EQ(v.reason, "no answer found (format auto)");
  EXPECT_FALSE(verify_math("   \n\t ", "1").correct);
  EXPECT_FALSE(verify_math("\\boxed{}", "1").correct);
  EXPECT_FALSE(verify_math("no numbers here at all", "1").correct);
}

TEST(MathRobustness, LongAndBinaryInputs) {
  std::string long_text(2'000'000, 'a');
  long_text += " The answer is 7.";
  EXPECT_TRUE(verify_bounded(long_text, "7").correct);  // the end is kept
  std::string many_boxes;
  for (int i = 0; i < 20000; ++i) many_boxes += "\\boxed{" + std::to_string(i) + "} ";
  EXPECT_TRUE(verify_bounded(many_boxes, "19999").correct);  // the last box wins
  std::string binary;
  for (int i = 0; i < 4096; ++i) binary += static_cast<char>(i % 256);
  EXPECT_FALSE(verify_bounded(binary, "1").correct);
  std::string long_sum = "1";
  for (int i = 0; i < 3000; ++i) long_sum += "+1";
  EXPECT_FALSE(verify_bounded(long_sum, "3001").correct);  // over the size limit: refused, not slow
  std::string list;
  for (int i = 0; i < 1000; ++i) list += std::to_string(i) + ",";
  verify_bounded(list + "1", list + "1");
  std::string pm;
  for (int i = 0; i < 200; ++i) pm += "1\\pm ";
  verify_bounded(pm + "1", pm + "1");
}

}  // namespace
}  // namespace rlf::math

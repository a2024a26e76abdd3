// A table of tricky answer pairs: equivalent ones must verify, non-equivalent
// ones must not. Each row says why it is tricky.
#include <gtest/gtest.h>

#include "rewards/math/math_verify.h"

namespace rlf::math {
namespace {

struct Pair {
  const char* prediction;
  const char* reference;
  bool equal;
  const char* why;
};

const Pair kPairs[] = {
    // Fractions, decimals, integers.
    {"0.5", "\\frac12", true, "decimal vs \\frac shorthand"},
    {"1/2", "\\frac{1}{2}", true, "slash vs \\frac"},
    {"\\dfrac{1}{2}", "0.5", true, "\\dfrac"},
    {"\\tfrac{3}{4}", ".75", true, "\\tfrac, leading-dot decimal"},
    {"\\frac 59", "\\frac{5}{9}", true, "\\frac with a space"},
    {"\\frac9{19}", "9/19", true, "\\frac9{19}"},
    {"2/4", "\\frac{1}{2}", true, "unreduced fraction"},
    {"18.00", "18", true, "trailing .00"},
    {"-\\frac{3}{8}", "-0.375", true, "negative fraction"},
    {"\\frac{-3}{8}", "-\\frac38", true, "sign inside the fraction"},
    {"1\\frac{4}{5}", "\\frac95", true, "mixed number"},
    {"137 \\frac{1}{2}", "137.5", true, "mixed number with a space"},
    {"6.72\\times10^{-5}", ".0000672", true, "scientific notation, LaTeX"},
    {"6.72e-5", "0.0000672", true, "scientific notation, plain"},
    {"0.3", "\\frac13", false, "0.3 is not 1/3"},
    {"0.333333", "\\frac13", false, "a truncated decimal is not 1/3"},
    {"10", "100", false, "a missing zero"},
    {"\\frac12", "2", false, "inverted fraction"},
    {"\\frac{2}{1}", "\\frac{1}{2}", false, "swapped numerator and denominator"},
    {"-5", "5", false, "sign"},
    // Thousands separators, currency, units, percent, degrees.
    {"1,000", "1000", true, "comma thousands"},
    {"1{,}000", "1000", true, "LaTeX {,} thousands"},
    {"10,\\!080", "10080", true, "LaTeX ,\\! thousands"},
    {"11,\\! 111,\\! 111,\\! 100", "11111111100", true, "several ,\\! groups"},
    {"\\$32,\\!348", "32348", true, "dollar sign and thousands"},
    {"$18.90", "\\$18.90", true, "plain vs escaped dollar"},
    {"5\\text{ cm}", "5", true, "a unit in \\text"},
    {"864 \\mbox{ inches}^2", "864", true, "a squared unit in \\mbox"},
    {"15\\mbox{ cm}^2", "15", true, "\\mbox unit"},
    {"5.4 \\text{ cents}", "5.4", true, "decimal with a unit"},
    {"50\\%", "50", true, "percent sign"},
    {"30^\\circ", "30", true, "degrees"},
    {"30^{\\circ}", "30^\\circ", true, "braced degrees"},
    {"\\frac{270}7\\text{ degrees}", "\\frac{270}{7}", true, "degrees as a word"},
    {"18 dollars", "18", true, "a plain-text unit"},
    {"50\\%", "0.5", false, "percent is not rescaled: 50% is 50"},
    // Roots, pi, symbolic values.
    {"\\frac{\\sqrt{3}}{2}", "\\sqrt3/2", true, "\\sqrt{3} vs \\sqrt3"},
    {"2\\sqrt{2}", "\\sqrt{8}", true, "simplified surd"},
    {"\\sqrt{8}", "2\\sqrt{3}", false, "different surd"},
    {"\\frac{\\sqrt{3}}{3}", "\\frac{1}{\\sqrt{3}}", true, "rationalised denominator"},
    {"\\sqrt[3]{8}", "2", true, "cube root"},
    {"8 \\pi", "8\\pi", true, "\\pi with a space"},
    {"2\\pi", "6.283185307179586", true, "pi to double precision"},
    {"2\\pi", "6.28", false, "a rounded pi is not pi"},
    {"\\pi", "3.14", false, "3.14 is not pi"},
    {"e^2", "\\exp(2)", true, "Euler's number"},
    {"\\sin^2 x + \\cos^2 x", "1", false, "identity but variables differ ({x} vs none)"},
    {"\\ln 8", "3\\ln 2", true, "logarithm rule"},
    {"\\log_2 8", "3", true, "log with a base"},
    {"5!", "120", true, "factorial"},
    {"\\binom{5}{2}", "10", true, "binomial"},
    {"|-3|", "3", true, "absolute value"},
    // Polynomials and expressions with variables.
    {"x^2+2x+1", "(x+1)^2", true, "expanded square"},
    {"(a+5)(b+2)", "ab+2a+5b+10", true, "expanded product"},
    {"x^2+2x+1", "(x-1)^2", false, "sign in a square"},
    {"\\cot x", "\\frac{\\cos x}{\\sin x}", true, "trig identity"},
    {"\\frac{11+9a}{20}", "\\frac{11}{20}+\\frac{9a}{20}", true, "split fraction"},
    {"3R^2", "3r^2", false, "variable case matters"},
    {"x", "y", false, "different variables"},
    {"2k+2", "2(k+1)", true, "factored"},
    // Assignments and equations.
    {"x = 5", "5", true, "a single-variable assignment"},
    {"5", "x=5", true, "assignment in the reference"},
    {"x = 6", "5", false, "wrong assigned value"},
    {"y = 2x + 3", "y=2x+3", true, "spaces"},
    {"2x - y + 3 = 0", "y = 2x + 3", true, "rearranged line"},
    {"y = 2x - 3", "y = 2x + 3", false, "different intercept"},
    {"-5x + 7y - 11z - 4 = 0", "5x - 7y + 11z + 4 = 0", true, "plane scaled by -1"},
    // Intervals, tuples, sets, lists.
    {"(1,2)", "(2,1)", false, "point order matters"},
    {"(3,4]", "(3,4)", false, "half-open vs open"},
    {"[3,4]", "(3,4)", false, "closed vs open"},
    {"\\left( 3, \\frac{\\pi}{2} \\right)", "(3,\\pi/2)", true, "\\left/\\right"},
    {"[-2,7]", "x \\in [-2,7]", true, "x \\in interval"},
    {"(5,\\infty)", "(5, \\infty)", true, "infinite interval"},
    {"(5,\\infty)", "[5,\\infty)", false, "open vs closed end"},
    {"(-\\infty, 0]", "(-\\infty,0)", false, "closed vs open at 0"},
    {"(3,\\infty)\\cup(-\\infty,2)", "(-\\infty, 2) \\cup (3, \\infty)", true, "union order"},
    {"\\{2,1\\}", "\\{1,2\\}", true, "set order"},
    {"1, 2", "\\{1,2\\}", true, "list vs set"},
    {"1,2,3", "\\{1,2\\}", false, "extra member"},
    {"-2,1", "1,-2", true, "list of solutions, any order"},
    {"1+\\sqrt5, 1-\\sqrt5, -2", "\\{1\\pm\\sqrt{5},-2\\}", true, "\\pm expands to two members"},
    {"3+2\\sqrt2, 3-2\\sqrt2", "3 \\pm 2 \\sqrt{2}", true, "\\pm at top level"},
    {"3+2\\sqrt2", "3 \\pm 2 \\sqrt{2}", false, "only one of the two solutions"},
    {"(1,2,3)", "(1,2)", false, "tuple length"},
    // Matrices and vectors.
    {"\\begin{pmatrix} 0.2 \\\\ -3.6 \\end{pmatrix}", "\\begin{pmatrix} 1/5 \\\\ -18/5 \\end{pmatrix}", true, "vector entries"},
    {"\\begin{pmatrix} -18/5 \\\\ 1/5 \\end{pmatrix}", "\\begin{pmatrix} 1/5 \\\\ -18/5 \\end{pmatrix}", false, "vector order"},
    {"\\begin{bmatrix} -1 & 0 \\\\ 0 & -1 \\end{bmatrix}", "\\begin{pmatrix} -1 & 0 \\\\ 0 & -1 \\end{pmatrix}", true, "bmatrix vs pmatrix"},
    {"\\begin{pmatrix} -1 & 0 \\\\ 0 & 1 \\end{pmatrix}", "\\begin{pmatrix} -1 & 0 \\\\ 0 & -1 \\end{pmatrix}", false, "one entry"},
    // Words, choices, bases, complex numbers.
    {"\\text{(C)}", "C", true, "choice letter in \\text"},
    {"(C)", "\\text{(C)}", true, "choice letter in parentheses"},
    {"B", "\\text{(C)}", false, "different choice"},
    {"Even", "\\text{even}", true, "word, case-insensitive"},
    {"odd", "\\text{even}", false, "different word"},
    {"52_8", "52_{8}", true, "base subscript"},
    {"52", "52_8", true, "digits without the base"},
    {"42", "52_8", false, "the value in base 10 is not the digits asked for"},
    {"53_8", "52_8", false, "different digits"},
    {"6+9i", "9i+6", true, "complex number, reordered"},
    {"6-9i", "6+9i", false, "conjugate"},
    {"", "5", false, "empty prediction"},
    {"5", "", false, "empty reference"},
};

TEST(MathPairs, TableIsLargeEnough) { EXPECT_GE(std::size(kPairs), 60u); }

TEST(MathPairs, EveryPairHasTheExpectedVerdict) {
  for (const Pair& p : kPairs) {
    std::string reason;
    bool equal = math_equal(p.prediction, p.reference, &reason);
    EXPECT_EQ(equal, p.equal) << p.why << ": '" << p.prediction << "' vs '" << p.reference << "' (" << reason << ")";
  }
}

TEST(MathPairs, EquivalenceIsSymmetricOnTheTable) {
  for (const Pair& p : kPairs) {
    if (std::string(p.prediction).empty() || std::string(p.reference).empty()) continue;
    std::string reason;
    EXPECT_EQ(math_equal(p.reference, p.prediction, &reason), p.equal)
        << "reversed: " << p.why << ": '" << p.reference << "' vs '" << p.prediction << "' (" << reason << ")";
  }
}

TEST(MathPairs, ReasonsExplainTheVerdict) {
  std::string reason;
  EXPECT_FALSE(math_equal("10", "100", &reason));
  EXPECT_EQ(reason, "values differ: 10 vs 100");
  EXPECT_FALSE(math_equal("(3,4]", "(3,4)", &reason));
  EXPECT_EQ(reason, "different brackets: (] vs ()");
  EXPECT_FALSE(math_equal("x+1", "y+1", &reason));
  EXPECT_EQ(reason, "different variables: {x} vs {y}");
  EXPECT_FALSE(math_equal("1, 2", "\\{1,2,3\\}", &reason));
  EXPECT_EQ(reason, "different number of members: 2 vs 3");
  EXPECT_TRUE(math_equal("x^2+2x+1", "(x+1)^2", &reason));
  EXPECT_EQ(reason, "equal at 6 sample points");
}

}  // namespace
}  // namespace rlf::math

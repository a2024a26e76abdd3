// Answer extraction, normalisation, the expression parser, and dataset
// record errors: small fixtures with exact expected values.
#include <gtest/gtest.h>

#include <fstream>

#include "rewards/math/answer_extract.h"
#include "rewards/math/latex_normalize.h"
#include "rewards/math/math_dataset.h"
#include "rewards/math/math_expr.h"
#include "tests/support/test_env.h"

namespace rlf::math {
namespace {

std::string extract(const std::string& text, AnswerFormat format = AnswerFormat::Auto) {
  return extract_answer(text, format).value_or("<none>");
}

TEST(MathExtract, Gsm8k) {
  EXPECT_EQ(extract("She makes 9 * 2 = $18.\n#### 18"), "18");
  EXPECT_EQ(extract("so 70,000 in all\n#### 70,000"), "70,000");
  EXPECT_EQ(extract("#### -3.5\n"), "-3.5");
  EXPECT_EQ(extract("#### $1,234.00", AnswerFormat::Gsm8k), "$1,234.00");
  EXPECT_EQ(extract("no marker", AnswerFormat::Gsm8k), "<none>");
}

TEST(MathExtract, BoxedLastWinsAndNestedBraces) {
  EXPECT_EQ(extract("first \\boxed{1} then \\boxed{\\frac{1}{2}}"), "\\frac{1}{2}");
  EXPECT_EQ(extract("$\\boxed{\\left( 3, \\frac{\\pi}{2} \\right)}$."), "\\left( 3, \\frac{\\pi}{2} \\right)");
  EXPECT_EQ(extract("\\fbox{\\{1, 2\\}}"), "\\{1, 2\\}");
  EXPECT_EQ(extract("\\boxed 5$"), "5");
  EXPECT_EQ(extract("\\boxed{{{7}}}"), "{{7}}");
  EXPECT_EQ(extract("\\boxed{1} and \\fbox{2}"), "2");
  EXPECT_EQ(extract("\\boxed{unclosed", AnswerFormat::Boxed), "<none>");
  EXPECT_EQ(extract("\\boxedx{3}", AnswerFormat::Boxed), "<none>");
}

TEST(MathExtract, AnswerIs) {
  EXPECT_EQ(extract("Adding up, 3 + 4 = 7. The answer is 7."), "7");
  EXPECT_EQ(extract("The answer is $\\frac{1}{2}$. Done, 99"), "\\frac{1}{2}");
  EXPECT_EQ(extract("So the final answer is 3.5."), "3.5");
  EXPECT_EQ(extract("The answer is $18.00."), "$18.00");
  EXPECT_EQ(extract("The answer is $\\$32,\\!348$."), "\\$32,\\!348");
  EXPECT_EQ(extract("Answer: 12 apples\nmore text 5"), "12 apples");
  EXPECT_EQ(extract("Final Answer: The final answer is $x^2$. I hope it is correct."), "x^2");
  EXPECT_EQ(extract("The answer is: **42**"), "42");
  EXPECT_EQ(extract("so 5"), "5");
  EXPECT_EQ(extract("12 apples"), "12");
}

TEST(MathExtract, BareAnswersAndLastNumber) {
  EXPECT_EQ(extract("\\frac{1}{2}"), "\\frac{1}{2}");
  EXPECT_EQ(extract("x = 5"), "x = 5");
  EXPECT_EQ(extract("even"), "even");
  EXPECT_EQ(extract("\\begin{pmatrix} 1 \\\\ 2 \\end{pmatrix}"), "\\begin{pmatrix} 1 \\\\ 2 \\end{pmatrix}");
  EXPECT_EQ(extract("I think there are 12 apples and 1,000 pears"), "1000");
  EXPECT_EQ(extract("it costs -4.25 dollars today"), "-4.25");
  EXPECT_EQ(extract("about .5 of them"), ".5");
  EXPECT_EQ(extract("nothing numeric here"), "<none>");
  EXPECT_EQ(extract("version 1.2.3 ships", AnswerFormat::LastNumber), "2.3");
}

TEST(MathExtract, FormatNames) {
  EXPECT_EQ(parse_answer_format("last-number"), AnswerFormat::LastNumber);
  EXPECT_EQ(format_name(AnswerFormat::AnswerIs), "answer-is");
  try {
    parse_answer_format("box");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "unknown answer format 'box': expected one of auto, boxed, gsm8k, answer-is, last-number");
  }
}

TEST(MathNormalize, Rules) {
  EXPECT_EQ(normalize_answer("$\\dfrac{1}{2}$"), "\\frac{1}{2}");
  EXPECT_EQ(normalize_answer("\\left( 1, 2 \\right]"), "( 1, 2 ]");
  EXPECT_EQ(normalize_answer("\\$1{,}000.00"), "1000.00");
  EXPECT_EQ(normalize_answer("10,\\!080"), "10080");
  EXPECT_EQ(normalize_answer("1,000"), "1000");
  EXPECT_EQ(normalize_answer("1,2"), "1,2");  // a list, not a thousands separator
  EXPECT_EQ(normalize_answer("5\\text{ cm}^2"), "5");
  EXPECT_EQ(normalize_answer("\\text{Navin}"), "Navin");
  EXPECT_EQ(normalize_answer("\\text{(B)}"), "B");
  EXPECT_EQ(normalize_answer("3 \\text{ and } 5"), "3 , 5");
  EXPECT_EQ(normalize_answer("45^{\\circ}"), "45");
  EXPECT_EQ(normalize_answer("12.5\\%"), "12.5");
  EXPECT_EQ(normalize_answer("x \\in [1, 2)"), "[1, 2)");
  EXPECT_EQ(normalize_answer("\\boxed{7}."), "7");
  EXPECT_EQ(normalize_answer("\\mathrm{cm}"), "cm");
  EXPECT_EQ(normalize_answer("\\leftarrow"), "\\leftarrow");
  EXPECT_EQ(normalize_answer("1 \\\\ 2"), "1 \\\\ 2");  // a matrix row break survives
}

double eval(const std::string& text) {
  std::string error;
  auto e = parse_expression(text, &error);
  EXPECT_TRUE(e.has_value()) << text << ": " << error;
  return e ? e->evaluate({}).approx : 0;
}

TEST(MathExpr, ParsesAndEvaluates) {
  EXPECT_DOUBLE_EQ(eval("2+3*4"), 14);
  EXPECT_DOUBLE_EQ(eval("2^3^2"), 512);
  EXPECT_DOUBLE_EQ(eval("-2^2"), -4);
  EXPECT_DOUBLE_EQ(eval("\\frac12"), 0.5);
  EXPECT_DOUBLE_EQ(eval("\\frac{1}{2}3"), 1.5);  // implicit product after a fraction
  EXPECT_DOUBLE_EQ(eval("2\\frac{1}{2}"), 2.5);  // mixed number
  EXPECT_DOUBLE_EQ(eval("2\\cdot\\frac{1}{2}"), 1);
  EXPECT_DOUBLE_EQ(eval("\\sqrt{16}"), 4);
  EXPECT_DOUBLE_EQ(eval("\\sqrt[3]{27}"), 3);
  EXPECT_DOUBLE_EQ(eval("3!"), 6);
  EXPECT_DOUBLE_EQ(eval("(1+2)(3+4)"), 21);
  EXPECT_DOUBLE_EQ(eval("\\log_2 8"), 3);
  EXPECT_DOUBLE_EQ(eval("\\lfloor 2.5 \\rfloor"), 2);
  EXPECT_NEAR(eval("\\sin(\\pi/2)"), 1, 1e-15);
  EXPECT_NEAR(eval("\\sin^{-1} 1"), 1.5707963267948966, 1e-15);
}

TEST(MathExpr, ExactRationals) {
  auto e = parse_expression("\\frac{1}{3}+\\frac{1}{6}");
  ASSERT_TRUE(e);
  Value v = e->evaluate({});
  EXPECT_TRUE(v.exact);
  EXPECT_EQ(v.to_string(), "1/2");
  EXPECT_EQ(parse_expression("0.1+0.2")->evaluate({}).to_string(), "3/10");
  EXPECT_EQ(parse_expression("\\sqrt{\\frac{9}{4}}")->evaluate({}).to_string(), "3/2");
  EXPECT_FALSE(parse_expression("\\sqrt{2}")->evaluate({}).exact);
}

TEST(MathExpr, Variables) {
  auto e = parse_expression("a_1 x^2 + \\theta y");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->variables(), (std::set<std::string>{"a_1", "theta", "x", "y"}));
  EXPECT_EQ(parse_expression("xy")->variables(), (std::set<std::string>{"x", "y"}));
}

TEST(MathExpr, RejectsWhatItDoesNotUnderstand) {
  std::string error;
  EXPECT_FALSE(parse_expression("\\foo{1}", &error));
  EXPECT_EQ(error, "unsupported command '\\foo'");
  EXPECT_FALSE(parse_expression("1 2", &error));
  EXPECT_EQ(error, "two numbers in a row");
  EXPECT_FALSE(parse_expression("(1+2", &error));
  EXPECT_EQ(error, "expected ')' before ''");
  EXPECT_FALSE(parse_expression(std::string(3000, '1'), &error));
  EXPECT_EQ(error, "expression longer than 2000 characters");
}

TEST(MathDataset, RecordErrorsNameFileAndLine) {
  test::TempDir dir;
  auto write = [&](const std::string& name, const std::string& text) {
    std::ofstream(dir / name) << text;
    return (dir / name).string();
  };
  std::string no_fields = write("a.jsonl", "{\"solution\": \"\\\\boxed{1}\", \"answer\": \"1\"}\n{\"question\": \"q\"}\n");
  try {
    check_dataset(no_fields);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "'" + no_fields + "' line 2: cannot tell the record's format: expected 'solution' and "
                                     "'answer' (MATH) or 'answer' with a '#### n' line (GSM8K); use "
                                     "--solution-field/--answer-field");
  }
  std::string custom = write("b.jsonl", "{\"out\": \"The answer is 4.\", \"gold\": \"4\"}\n{\"out\": \"5\"}\n");
  DatasetCheckOptions options;
  options.solution_field = "out";
  options.answer_field = "gold";
  try {
    check_dataset(custom, options);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "'" + custom + "' line 2: missing field 'gold' (use --solution-field/--answer-field to name the fields)");
  }
  std::string ok = write("c.jsonl", "{\"out\": \"The answer is 4.\", \"gold\": \"4\"}\n\n{\"out\": \"so 5\", \"gold\": \"#### 6\"}\n");
  DatasetReport report = check_dataset(ok, options);
  EXPECT_EQ(report.total, 2u);
  EXPECT_EQ(report.agree, 1u);
  ASSERT_EQ(report.failures.size(), 1u);
  EXPECT_EQ(report.failures[0].line, 3u);
  EXPECT_EQ(report.failures[0].reference, "6");
  EXPECT_EQ(report.failures[0].reason, "values differ: 5 vs 6");
  Json j = report.to_json();
  EXPECT_EQ(j["agree"], 1);
  EXPECT_EQ(j["total"], 2);
  EXPECT_DOUBLE_EQ(j["rate"].get<double>(), 0.5);
}

}  // namespace
}  // namespace rlf::math

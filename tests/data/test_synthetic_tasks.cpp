// Synthetic tasks: determinism by seed, answers recomputed independently from
// the prompt text, distinctness, countdown references that verify, and SFT
// pairs with an exact share of wrong responses; SftDataset from JSONL.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <set>

#include "data/countdown.h"
#include "data/prompt_dataset.h"
#include "data/sft_dataset.h"
#include "data/synthetic_tasks.h"
#include "tests/data/data_fixtures.h"

namespace rlf {
namespace {

using test::error_of;

struct Parsed {
  long long a = 0, b = 0;
  char op = 0;
};

// Reads "What is A op B?" back from the prompt text.
Parsed parse_arithmetic_prompt(const std::string& text) {
  Parsed p;
  EXPECT_EQ(std::sscanf(text.c_str(), "What is %lld %c %lld?", &p.a, &p.op, &p.b), 3) << text;
  return p;
}

TEST(SyntheticTasks, ArithmeticAnswersAreRight) {
  ArithmeticOptions o;
  o.n_problems = 3000;
  o.min_digits = 1;
  o.max_digits = 3;
  std::vector<PromptExample> v = generate_arithmetic(o, 11);
  ASSERT_EQ(v.size(), 3000u);
  std::set<std::string> prompts, ops;
  for (const PromptExample& e : v) {
    Parsed p = parse_arithmetic_prompt(e.raw_prompt);
    long long expected = p.op == '+' ? p.a + p.b : p.op == '-' ? p.a - p.b : p.a * p.b;
    ASSERT_EQ(e.reference, std::to_string(expected)) << e.raw_prompt;
    ASSERT_EQ(e.record["answer"].get<long long>(), expected);
    ASSERT_EQ(e.record["a"].get<long long>(), p.a);
    ASSERT_LE(p.a, 999);
    ASSERT_LE(p.b, 999);
    if (p.op == '-') {
      ASSERT_GE(expected, 0) << "allow_negative is off";
    }
    prompts.insert(e.raw_prompt);
    ops.insert(std::string(1, p.op));
  }
  EXPECT_EQ(prompts.size(), 3000u);  // distinct
  EXPECT_EQ(ops, (std::set<std::string>{"+", "-", "*"}));
}

TEST(SyntheticTasks, ArithmeticIsDeterministicBySeed) {
  ArithmeticOptions o;
  o.n_problems = 50;
  auto a = generate_arithmetic(o, 1), b = generate_arithmetic(o, 1), c = generate_arithmetic(o, 2);
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].raw_prompt, b[i].raw_prompt);
    EXPECT_EQ(a[i].record, b[i].record);
  }
  size_t same = 0;
  for (size_t i = 0; i < a.size(); ++i) same += a[i].raw_prompt == c[i].raw_prompt;
  EXPECT_LT(same, 5u);
  // Pinned: the generator is portable (no std distributions), so these never change.
  EXPECT_EQ(a[0].raw_prompt, "What is 99 + 64?");
  EXPECT_EQ(a[0].id, "arithmetic:0");
}

TEST(SyntheticTasks, ArithmeticOptionErrors) {
  ArithmeticOptions o;
  o.min_digits = 1;
  o.max_digits = 1;
  o.operations = "+";
  o.n_problems = 100;  // exactly the 10 x 10 possible problems
  EXPECT_EQ(generate_arithmetic(o, 0).size(), 100u);
  o.n_problems = 101;
  EXPECT_EQ(error_of([&] { generate_arithmetic(o, 0); }),
            "arithmetic: only 100 distinct problems found for n_problems = 101; allow more digits or operations, or ask "
            "for fewer problems");
  o.operations = "+/";
  EXPECT_EQ(error_of([&] { generate_arithmetic(o, 0); }),
            "arithmetic.operations must be a non-empty string of '+', '-', '*' (got \"+/\")");
  o.operations = "+";
  o.max_digits = 10;
  EXPECT_EQ(error_of([&] { generate_arithmetic(o, 0); }), "arithmetic.max_digits must be in min_digits..9 (got 10)");
}

TEST(SyntheticTasks, CountdownReferencesVerify) {
  CountdownOptions o;
  o.n_problems = 1000;
  std::vector<PromptExample> v = generate_countdown(o, 5);
  ASSERT_EQ(v.size(), 1000u);
  std::set<std::string> prompts;
  for (const PromptExample& e : v) {
    CountdownProblem p = countdown_problem_from_record(e.record, e.where);
    ASSERT_EQ(p.numbers.size(), 4u);
    for (int64_t n : p.numbers) ASSERT_TRUE(n >= 1 && n <= 25);
    ASSERT_TRUE(p.target >= 1 && p.target <= 100);
    CountdownVerdict verdict = verify_countdown(e.reference, p);
    ASSERT_TRUE(verdict.correct) << e.raw_prompt << " / " << e.reference << ": " << verdict.reason;
    prompts.insert(e.raw_prompt);
  }
  EXPECT_EQ(prompts.size(), 1000u);
  EXPECT_EQ(v[0].raw_prompt.substr(0, 18), "Using the numbers ");
  auto again = generate_countdown(o, 5);
  EXPECT_EQ(again[999].record, v[999].record);
}

TEST(SyntheticTasks, SftPairsWithAnExactShareOfWrongAnswers) {
  ArithmeticOptions o;
  o.n_problems = 200;
  std::vector<PromptExample> problems = generate_arithmetic(o, 3);
  std::vector<SftExample> pairs = synthetic_sft_examples(problems, {0.25, 3});
  ASSERT_EQ(pairs.size(), 200u);
  size_t n_wrong = 0;
  for (size_t i = 0; i < pairs.size(); ++i) {
    Parsed p = parse_arithmetic_prompt(pairs[i].raw_prompt);
    long long claimed = 0;
    char op = 0;
    long long a = 0, b = 0, after = 0;
    ASSERT_EQ(std::sscanf(pairs[i].response.c_str(), "%lld %c %lld = %lld. #### %lld", &a, &op, &b, &claimed, &after), 5)
        << pairs[i].response;
    EXPECT_EQ(claimed, after);
    EXPECT_EQ(a, p.a);
    bool right = std::to_string(claimed) == problems[i].reference;
    EXPECT_EQ(right, pairs[i].correct);
    n_wrong += !right;
  }
  EXPECT_EQ(n_wrong, 50u);
  EXPECT_EQ(synthetic_sft_examples(problems, {0.25, 3})[7].response, pairs[7].response);
  const SftExample& first = pairs[0];
  Parsed p0 = parse_arithmetic_prompt(first.raw_prompt);
  if (first.correct) {
    EXPECT_EQ(first.response, std::to_string(p0.a) + " " + p0.op + " " + std::to_string(p0.b) + " = " +
                                  problems[0].reference + ". #### " + problems[0].reference);
  }

  CountdownOptions c;
  c.n_problems = 100;
  std::vector<PromptExample> cd = generate_countdown(c, 4);
  std::vector<SftExample> cd_pairs = synthetic_sft_examples(cd, {0.3, 4});
  size_t cd_wrong = 0;
  for (size_t i = 0; i < cd_pairs.size(); ++i) {
    CountdownVerdict v = verify_countdown(countdown_answer(cd_pairs[i].response), countdown_problem_from_record(cd[i].record, ""));
    EXPECT_EQ(v.correct, cd_pairs[i].correct) << cd_pairs[i].response;
    cd_wrong += !v.correct;
  }
  EXPECT_EQ(cd_wrong, 30u);
}

TEST(SftDataset, SyntheticPromptsMatchThePromptDataset) {
  SftDatasetOptions s;
  s.preset = "arithmetic";
  s.arithmetic.n_problems = 40;
  s.chat_template = "chatml";
  s.system_prompt = "Answer briefly.";
  s.wrong_fraction = 0.5;
  s.seed = 9;
  SftDataset sft = SftDataset::load(s);
  ASSERT_EQ(sft.examples().size(), 40u);
  EXPECT_EQ(sft.summary(), "sft arithmetic: 40 pairs (20 wrong), 0 skipped");

  PromptDatasetOptions p;
  p.preset = "arithmetic";
  p.arithmetic.n_problems = 40;
  p.chat_template = "chatml";
  p.system_prompt = "Answer briefly.";
  p.seed = 9;
  PromptDataset rl = PromptDataset::load(p);
  EXPECT_EQ(sft.examples()[0].prompt, rl.train()[0].prompt);
  EXPECT_EQ(sft.examples()[0].prompt, "<|im_start|>system\nAnswer briefly.<|im_end|>\n<|im_start|>user\n" +
                                          rl.train()[0].raw_prompt +
                                          " End your answer with #### followed by the number.<|im_end|>\n"
                                          "<|im_start|>assistant\n");
}

TEST(SftDataset, FromJsonl) {
  test::TempDir dir;
  std::string path = test::write_fixture(dir, "sft.jsonl",
                                         "{\"prompt\": \"Say hi\", \"response\": \"hi\"}\n"
                                         "{\"prompt\": \"Say bye\"}\n"
                                         "{\"instruction\": \"Count\", \"output\": \"1 2 3\"}\n");
  SftDatasetOptions o;
  o.path = path;
  EXPECT_EQ(error_of([&] { SftDataset::load(o); }), "'" + path + "' line 2: missing field 'response'");
  o.on_bad_record = "skip";
  SftDataset ds = SftDataset::load(o);
  ASSERT_EQ(ds.examples().size(), 1u);
  EXPECT_EQ(ds.n_skipped(), 2u);
  EXPECT_EQ(ds.examples()[0].prompt, "Say hi");
  EXPECT_EQ(ds.examples()[0].response, "hi");
  EXPECT_EQ(ds.examples()[0].id, "sft.jsonl:1");

  o.prompt_field = "instruction";
  o.response_field = "output";
  o.prompt_template = "Task: {prompt}";
  ds = SftDataset::load(o);
  ASSERT_EQ(ds.examples().size(), 1u);
  EXPECT_EQ(ds.examples()[0].prompt, "Task: Count");
  EXPECT_EQ(ds.examples()[0].response, "1 2 3");
  EXPECT_EQ(ds.examples()[0].where, "'" + path + "' line 3");

  SftDatasetOptions from_table = sft_dataset_options_from_json(
      {{"preset", "countdown"}, {"wrong_fraction", 0.2}, {"countdown", {{"n_problems", 10}}}}, "[sft]");
  SftDataset cd = SftDataset::load(from_table);
  EXPECT_EQ(cd.summary(), "sft countdown: 10 pairs (2 wrong), 0 skipped");
  EXPECT_EQ(error_of([] { sft_dataset_options_from_json({{"respones_field", "x"}}, "[sft]"); }).substr(0, 47),
            "[sft]: unknown key 'respones_field' (expected o");

  EXPECT_EQ(error_of([] { sft_dataset_options_from_json({{"preset", "arithmetic"}, {"draws", 0}}, "[sft.data]"); }),
            "[sft.data]: draws must be in [1, 1000] (got 0)");
  from_table = sft_dataset_options_from_json({{"preset", "arithmetic"}, {"draws", 3}, {"arithmetic", {{"n_problems", 10}}}},
                                             "[sft.data]");
  EXPECT_EQ(SftDataset::load(from_table).examples().size(), 30u);
  o.draws = 2;
  EXPECT_EQ(error_of([&] { SftDataset::load(o); }), "sft dataset: draws applies to the synthetic presets only");
  o.draws = 1;

  o.preset = "gsm8k";
  EXPECT_EQ(error_of([&] { SftDataset::load(o); }),
            "sft dataset: preset 'gsm8k' has no responses; use preset \"generic\" with a file of (prompt, response) "
            "records, or \"arithmetic\" / \"countdown\"");
}

}  // namespace
}  // namespace rlf

namespace rlf {
namespace {

using test::error_of;

TEST(SyntheticTasks, CarryFreeAnswersByHand) {
  EXPECT_EQ(carry_free_answer(37, '+', 48), 75);    // 7+8 -> 5, 3+4 -> 7
  EXPECT_EQ(carry_free_answer(85, '+', 48), 23);    // 5+8 -> 3, 8+4 -> 2 (hundreds dropped)
  EXPECT_EQ(carry_free_answer(12, '+', 41), 53);    // no carry: the true sum
  EXPECT_EQ(carry_free_answer(5, '+', 37), 32);
  EXPECT_EQ(carry_free_answer(52, '-', 17), 45);    // |2-7| = 5, 5-1 = 4
  EXPECT_EQ(carry_free_answer(100, '-', 1), 101);   // |0-1| = 1, 0, 1
  EXPECT_THROW(carry_free_answer(3, '*', 4), Error);
  EXPECT_THROW(carry_free_answer(3, '-', 4), Error);
}

TEST(SyntheticTasks, DropCarryWrongsAreTheCarryFreeAnswersOfEligibleProblems) {
  ArithmeticOptions o;
  o.n_problems = 300;
  o.min_digits = 2;
  o.operations = "+-";
  std::vector<PromptExample> problems = generate_arithmetic(o, 5);
  size_t eligible = 0;
  for (const auto& p : problems) {
    const Json& r = p.record;
    eligible += carry_free_answer(r["a"].get<int64_t>(), r["op"].get<std::string>()[0], r["b"].get<int64_t>()) !=
                r["answer"].get<int64_t>();
  }
  std::vector<SftExample> pairs = synthetic_sft_examples(problems, {0.5, 5, WrongStyle::DropCarry});
  size_t n_wrong = 0;
  for (size_t i = 0; i < pairs.size(); ++i) {
    const Json& r = problems[i].record;
    const int64_t cf = carry_free_answer(r["a"].get<int64_t>(), r["op"].get<std::string>()[0], r["b"].get<int64_t>());
    const std::string want = std::to_string(pairs[i].correct ? r["answer"].get<int64_t>() : cf);
    EXPECT_EQ(pairs[i].response.substr(pairs[i].response.rfind("#### ") + 5), want) << pairs[i].response;
    n_wrong += !pairs[i].correct;
  }
  EXPECT_EQ(n_wrong, static_cast<size_t>(std::llround(0.5 * static_cast<double>(eligible))));
  EXPECT_GT(n_wrong, 50u);
  EXPECT_EQ(parse_wrong_style("drop_carry"), WrongStyle::DropCarry);
  EXPECT_THROW(parse_wrong_style("carry"), Error);
  CountdownOptions c;
  c.n_problems = 5;
  EXPECT_THROW(synthetic_sft_examples(generate_countdown(c, 1), {0.5, 1, WrongStyle::DropCarry}), Error);
}

TEST(SyntheticTasks, ColumnSumsByHand) {
  EXPECT_EQ(column_sum(37, 48, false).text, "7+8=15, 3+4+1=8. #### 85");
  EXPECT_EQ(column_sum(37, 48, true).text, "7+8=15, 3+4=7. #### 75");
  EXPECT_EQ(column_sum(99, 35, false).text, "9+5=14, 9+3+1=13. #### 134");
  EXPECT_EQ(column_sum(99, 35, true).text, "9+5=14, 9+3=12. #### 124");
  EXPECT_EQ(column_sum(61, 27, true).text, "1+7=8, 6+2=8. #### 88");  // nothing to carry: the same either way
  EXPECT_EQ(column_sum(5, 97, false).text, "5+7=12, 0+9+1=10. #### 102");
  EXPECT_EQ(column_sum(0, 0, false).text, "0+0=0. #### 0");
  EXPECT_EQ(column_sum(999, 1, false).text, "9+1=10, 9+0+1=10, 9+0+1=10. #### 1000");
  for (int64_t a = 0; a < 300; a += 7)
    for (int64_t b = 0; b < 300; b += 11) EXPECT_EQ(column_sum(a, b, false).answer, a + b) << a << " + " << b;
  EXPECT_THROW(column_sum(-1, 2, false), Error);
}

// columns: right sums worked column by column, the wrong ones with every
// carry dropped; only problems with a carry can be wrong.
TEST(SyntheticTasks, ColumnsShowTheDroppedCarryAsAStep) {
  ArithmeticOptions o;
  o.n_problems = 100;
  o.min_digits = 2;
  o.max_digits = 2;
  o.operations = "+";
  std::vector<PromptExample> problems = generate_arithmetic(o, 8);
  SyntheticSftOptions so;
  so.wrong_fraction = 1.0;
  so.style = WrongStyle::DropCarry;
  so.columns = true;
  std::vector<SftExample> pairs = synthetic_sft_examples(problems, so);
  for (size_t i = 0; i < pairs.size(); ++i) {
    const Json& r = problems[i].record;
    const int64_t a = r["a"].get<int64_t>(), b = r["b"].get<int64_t>();
    const bool carries = a % 10 + b % 10 >= 10;
    EXPECT_EQ(pairs[i].correct, !carries) << pairs[i].response;
    EXPECT_EQ(pairs[i].response, column_sum(a, b, carries).text);
  }
  so.style = WrongStyle::Offset;
  EXPECT_THROW(synthetic_sft_examples(problems, so), Error);
  EXPECT_EQ(error_of([] {
              sft_dataset_options_from_json({{"preset", "arithmetic"}, {"columns", true}, {"wrong_fraction", 0.5}},
                                            "[sft.data]");
            }),
            "[sft.data]: columns needs worked = true, wrong_style = \"drop_carry\" (with wrong_fraction > 0), and no "
            "tool_fraction");
  o.operations = "*";
  so.style = WrongStyle::DropCarry;
  EXPECT_NE(error_of([&] { synthetic_sft_examples(generate_arithmetic(o, 1), so); })
                .find("columns applies to sums of non-negative numbers"),
            std::string::npos);
}

// 100 two-digit sums (generator seed 8), the problems of the columns feedback tests.
std::vector<PromptExample> two_digit_sums() {
  ArithmeticOptions o;
  o.n_problems = 100;
  o.min_digits = 2;
  o.max_digits = 2;
  o.operations = "+";
  return generate_arithmetic(o, 8);
}

// columns with feedback targets: sums with a carry shown as the working with
// the carry dropped, the critique of that working ({critique}, written by the
// caller's critic), then the right working, which alone is trained on.
TEST(SyntheticTasks, ColumnsFeedbackTargetsShowTheCritiqueOfTheDroppedCarry) {
  const std::vector<PromptExample> problems = two_digit_sums();
  SyntheticSftOptions so;
  so.style = WrongStyle::DropCarry;
  so.columns = true;
  so.feedback_fraction = 0.3;
  so.feedback_text = "\n{critique} Again:\n";
  EXPECT_EQ(error_of([&] { synthetic_sft_examples(problems, so); }),
            "feedback_text has {critique}: it needs a critic to write it ([critic])");
  int64_t critiqued = 0;
  so.critique = [&](const PromptExample& p, const std::string& wrong) {
    ++critiqued;
    return "[" + p.id + ": " + wrong + "]";
  };
  std::vector<SftExample> pairs = synthetic_sft_examples(problems, so);
  int64_t n_feedback = 0;
  for (size_t i = 0; i < pairs.size(); ++i) {
    const Json& r = problems[i].record;
    const int64_t a = r["a"].get<int64_t>(), b = r["b"].get<int64_t>();
    if (pairs[i].turns.empty()) {
      EXPECT_EQ(pairs[i].response, column_sum(a, b, false).text);
      continue;
    }
    ++n_feedback;
    EXPECT_GE(a % 10 + b % 10, 10) << a << " + " << b;  // only sums with a carry to drop
    ASSERT_EQ(pairs[i].turns.size(), 3u);
    const std::string wrong = column_sum(a, b, true).text;
    EXPECT_EQ(pairs[i].turns[0].text, wrong);
    EXPECT_FALSE(pairs[i].turns[0].policy);
    EXPECT_EQ(pairs[i].turns[1].text, "\n[" + problems[i].id + ": " + wrong + "] Again:\n");
    EXPECT_FALSE(pairs[i].turns[1].policy);
    EXPECT_EQ(pairs[i].turns[2].text, column_sum(a, b, false).text);
    EXPECT_TRUE(pairs[i].turns[2].policy);
  }
  EXPECT_EQ(n_feedback, 30);
  EXPECT_EQ(critiqued, 30);
}

// feedback_prefix (FCP's offline targets): every prompt starts with the critic's words on its own trained
// answer — a right working and a dropped carry alike — and the targets themselves are unchanged.
TEST(SyntheticTasks, FeedbackPrefixPutsTheCritiqueOfEachTargetBeforeItsPrompt) {
  const std::vector<PromptExample> problems = two_digit_sums();
  SyntheticSftOptions so;
  so.style = WrongStyle::DropCarry;
  so.columns = true;
  so.wrong_fraction = 0.7;
  so.feedback_fraction = 0.1;
  so.feedback_text = "\nAgain:\n";
  const std::vector<SftExample> plain = synthetic_sft_examples(problems, so);
  so.feedback_prefix = "{critique}\n";
  EXPECT_EQ(error_of([&] { synthetic_sft_examples(problems, so); }),
            "feedback_prefix puts the critic's words on each target before its prompt: it needs {critique} and a "
            "critic ([critic])");
  so.critique = [](const PromptExample& p, const std::string& answer) {
    return "[" + p.id + (answer.find(",") != std::string::npos ? " worked" : " bare") + ": " + answer + "]";
  };
  const std::vector<SftExample> pairs = synthetic_sft_examples(problems, so);
  ASSERT_EQ(pairs.size(), plain.size());
  int64_t n_wrong = 0, n_turns = 0;
  for (size_t i = 0; i < pairs.size(); ++i) {
    EXPECT_EQ(pairs[i].response, plain[i].response);
    EXPECT_EQ(pairs[i].correct, plain[i].correct);
    const std::string trained = plain[i].turns.empty() ? plain[i].response : plain[i].turns.back().text;
    EXPECT_EQ(pairs[i].prompt, "[" + problems[i].id + " worked: " + trained + "]\n" + plain[i].prompt);
    n_wrong += !plain[i].correct, n_turns += !plain[i].turns.empty();
  }
  EXPECT_GT(n_wrong, 10);
  EXPECT_EQ(n_turns, 10);
}

// draws > 1: every problem answered `draws` times, each draw with its own
// seeded choice of wrong problems, so a mistake is a habit spread over every
// eligible problem rather than fixed to a set; draw 0 equals draws = 1.
TEST(SyntheticTasks, DrawsSpreadTheMistakeOverEveryEligibleProblem) {
  ArithmeticOptions o;
  o.n_problems = 200;
  o.min_digits = 2;
  o.max_digits = 2;
  o.operations = "+";
  std::vector<PromptExample> problems = generate_arithmetic(o, 3);
  SyntheticSftOptions so;
  so.wrong_fraction = 0.7;
  so.seed = 4;
  so.style = WrongStyle::DropCarry;
  const std::vector<SftExample> one = synthetic_sft_examples(problems, so);
  so.draws = 10;
  const std::vector<SftExample> many = synthetic_sft_examples(problems, so);
  ASSERT_EQ(many.size(), 10 * problems.size());
  for (size_t i = 0; i < problems.size(); ++i) {
    EXPECT_EQ(many[i].response, one[i].response);
    EXPECT_EQ(many[i].id, one[i].id);
  }
  EXPECT_EQ(many[problems.size() + 5].id, problems[5].id + "#1");
  // Per eligible problem, the share of wrong showings; with fixed choices it is 0 or 1.
  size_t eligible = 0, mixed = 0, n_wrong = 0;
  for (size_t i = 0; i < problems.size(); ++i) {
    size_t wrong = 0;
    for (size_t d = 0; d < 10; ++d) wrong += !many[d * problems.size() + i].correct;
    n_wrong += wrong;
    const Json& r = problems[i].record;
    if (carry_free_answer(r["a"].get<int64_t>(), '+', r["b"].get<int64_t>()) == r["answer"].get<int64_t>()) {
      EXPECT_EQ(wrong, 0u) << problems[i].prompt;  // nothing to drop: always right
      continue;
    }
    ++eligible;
    mixed += wrong > 0 && wrong < 10;
  }
  EXPECT_EQ(n_wrong, 10 * static_cast<size_t>(std::llround(0.7 * static_cast<double>(eligible))));
  EXPECT_GT(mixed, eligible * 8 / 10) << "most eligible problems are sometimes right, sometimes wrong";
  so.draws = 0;
  EXPECT_THROW(synthetic_sft_examples(problems, so), Error);
}

// Feedback targets: a wrong answer and the feedback (never trained on), then
// the right answer; {answer} and {prompt} filled; never the tool ones.
TEST(SyntheticTasks, FeedbackTargetsShowAWrongAnswerFeedbackThenTheRightOne) {
  ArithmeticOptions o;
  o.n_problems = 40;
  std::vector<PromptExample> problems = generate_arithmetic(o, 2);
  SyntheticSftOptions so;
  so.seed = 9;
  so.tool_fraction = 0.5;
  so.feedback_fraction = 0.25;
  so.feedback_text = "\nWrong: it is {answer}.\n\n{prompt}";
  std::vector<SftExample> pairs = synthetic_sft_examples(problems, so);
  int64_t n_feedback = 0;
  for (size_t i = 0; i < pairs.size(); ++i) {
    const SftExample& e = pairs[i];
    if (e.turns.size() != 3 || e.turns[0].policy) continue;  // direct or tool targets
    ++n_feedback;
    EXPECT_FALSE(e.turns[1].policy);
    EXPECT_TRUE(e.turns[2].policy);
    EXPECT_EQ(e.turns[1].text, "\nWrong: it is " + problems[i].reference + ".\n\n" + problems[i].prompt);
    const std::string tail = "#### " + problems[i].reference;
    ASSERT_GE(e.turns[2].text.size(), tail.size());
    EXPECT_EQ(e.turns[2].text.substr(e.turns[2].text.size() - tail.size()), tail);
    EXPECT_NE(e.turns[0].text, e.turns[2].text);
    EXPECT_TRUE(e.correct);
    EXPECT_EQ(e.response, e.turns[0].text + e.turns[1].text + e.turns[2].text);
  }
  EXPECT_EQ(n_feedback, 10);
}

TEST(SyntheticTasks, AnswerOnlyResponses) {
  ArithmeticOptions o;
  o.n_problems = 20;
  std::vector<PromptExample> problems = generate_arithmetic(o, 2);
  std::vector<SftExample> pairs = synthetic_sft_examples(problems, {0.0, 2, WrongStyle::Offset, /*worked=*/false});
  for (size_t i = 0; i < pairs.size(); ++i) EXPECT_EQ(pairs[i].response, "#### " + problems[i].reference);
}

}  // namespace
}  // namespace rlf

namespace rlf {
namespace {

TEST(SftDataset, HeldOutPromptsAreDroppedFromSft) {
  // The RL dataset's eval split and a synthetic SFT set with the same
  // options: the SFT set covers every problem, the filter removes the eval ones.
  PromptDatasetOptions p;
  p.preset = "arithmetic";
  p.arithmetic.n_problems = 100;
  p.eval_size = 20;
  PromptDataset rl = PromptDataset::load(p);
  SftDatasetOptions s;
  s.preset = "arithmetic";
  s.arithmetic.n_problems = 100;
  SftDataset sft = SftDataset::load(s);
  ASSERT_EQ(sft.examples().size(), 100u);
  auto kept = without_held_out_prompts(sft.examples(), rl.eval());
  EXPECT_EQ(kept.size(), 80u);
  std::set<std::string> eval_prompts;
  for (const auto& e : rl.eval()) eval_prompts.insert(e.prompt);
  for (const auto& e : kept) EXPECT_EQ(eval_prompts.count(e.prompt), 0u) << e.prompt;
}

}  // namespace
}  // namespace rlf

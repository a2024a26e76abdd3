// The text rewards on hand-written cases: math (answer extraction and
// equivalence through the math verifier), format (presets and user patterns),
// keywords, and length (DAPO's soft overlong punishment at its boundaries).
#include <gtest/gtest.h>

#include "rewards/exact_match.h"
#include "rewards/format_reward.h"
#include "rewards/keyword_reward.h"
#include "rewards/length_reward.h"
#include "tests/rewards/reward_test_util.h"

namespace rlf {
namespace {

using test::error_of;
using test::make_group;

// ---- math ----

TEST(MathReward, Gsm8kAnswersAgainstAWorkedReference) {
  ExactMatchReward reward;
  RewardGroup g = make_group({"48 + 24 = 72 clips.\n#### 72", "She sold 71.\n#### 71", "The total is 1,000 in all",
                              "\\boxed{72.0}"},
                             Json::object(), "Natalia sold 48/2 = <<48/2=24>>24 clips in May.\n#### 72");
  auto r = reward.score(g);
  ASSERT_EQ(r.size(), 4u);
  EXPECT_EQ(r[0].score, 1.0);
  EXPECT_EQ(r[0].explanation, "correct: expected 72, got 72");
  EXPECT_EQ(r[1].score, 0.0);
  EXPECT_EQ(r[1].explanation, "expected 72, got 71");
  EXPECT_EQ(r[2].score, 0.0);
  EXPECT_EQ(r[2].explanation, "expected 72, got 1000");
  EXPECT_EQ(r[3].score, 1.0);
  EXPECT_EQ(r[3].explanation, "correct: expected 72, got 72.0");
}

TEST(MathReward, FormatsAndEquivalence) {
  ExactMatchOptions boxed;
  boxed.answer_format = "boxed";
  ExactMatchReward by_box(boxed);
  auto r = by_box.score(make_group({"So x = \\boxed{\\frac{1}{2}}.", "x is 0.5", "\\boxed{\\dfrac12}"}, {}, "0.5"));
  EXPECT_EQ(r[0].score, 1.0);
  EXPECT_EQ(r[1].score, 0.0);
  EXPECT_EQ(r[1].explanation, "no answer found (format boxed)");
  EXPECT_EQ(r[2].score, 1.0);

  ExactMatchOptions last;
  last.answer_format = "last_number";
  ExactMatchReward by_number(last);
  r = by_number.score(make_group({"3 apples and 4 pears make 7", "3 apples and 4 pears"}, {}, "\\boxed{7}"));
  EXPECT_EQ(r[0].score, 1.0);
  EXPECT_EQ(r[0].explanation, "correct: expected 7, got 7");
  EXPECT_EQ(r[1].explanation, "expected 7, got 4");

  ExactMatchOptions gsm;
  gsm.answer_format = "gsm8k";
  gsm.correct_score = 2.0;
  gsm.incorrect_score = -1.0;
  ExactMatchReward by_hashes(gsm);
  r = by_hashes.score(make_group({"The answer is 42.", "#### 42"}, {}, "42"));
  EXPECT_EQ(r[0].score, -1.0);
  EXPECT_EQ(r[0].explanation, "no answer found (format gsm8k)");
  EXPECT_EQ(r[1].score, 2.0);
}

TEST(MathReward, ReferenceFromARecordField) {
  ExactMatchOptions o;
  o.reference_field = "answer";
  ExactMatchReward reward(o);
  auto r = reward.score(make_group({"\\boxed{\\{1,2\\}}"}, {{"answer", "\\{2, 1\\}"}}));
  EXPECT_EQ(r[0].score, 1.0);
  EXPECT_EQ(error_of([&] { reward.check_record({{"problem", "x"}}, "", "math.jsonl:4"); }),
            "math.jsonl:4: math reward needs a reference answer in field 'answer' (option reference_field), but the "
            "record has none");
}

TEST(MathReward, RecordsWithoutAReferenceAreRejected) {
  ExactMatchReward reward;
  EXPECT_EQ(error_of([&] { reward.check_record({}, "  ", "data.jsonl:3"); }),
            "data.jsonl:3: math reward needs a reference answer, but the record has none (give the dataset an answer "
            "field, or set the reward's reference_field)");
  reward.check_record({}, "42", "data.jsonl:4");  // fine
}

TEST(MathReward, OptionErrors) {
  ExactMatchOptions o;
  o.answer_format = "latex";
  EXPECT_EQ(error_of([&] { ExactMatchReward r(o); }),
            "option 'answer_format' is 'latex'; use one of: auto, gsm8k, boxed, answer_is, last_number");
  o.answer_format = "last-number";  // the verifier's spelling works too
  ExactMatchReward ok(o);
}

// ---- format ----

TEST(FormatReward, ThinkAnswerPreset) {
  FormatRewardOptions o;
  o.preset = "think_answer";
  FormatReward reward(o);
  auto r = reward.score(make_group({
      "<think>\nstep 1\nstep 2\n</think>\n<answer>42</answer>\n",
      "<think>reasoning <answer>42</answer>",
      "<think>a</think><answer>1</answer> and more",
      "<answer>1</answer><think>a</think>",
      "",
  }));
  EXPECT_EQ(r[0].score, 1.0);
  EXPECT_EQ(r[0].explanation, "format ok (think_answer)");
  EXPECT_EQ(r[1].score, 0.0);
  EXPECT_EQ(r[1].explanation, "format mismatch (think_answer): no </think> tag");
  EXPECT_EQ(r[2].explanation, "format mismatch (think_answer): text outside the tags");
  EXPECT_EQ(r[3].explanation, "format mismatch (think_answer): <answer> out of order");
  EXPECT_EQ(r[4].explanation, "format mismatch (think_answer): no <think> tag");
}

TEST(FormatReward, SearchPresets) {
  FormatRewardOptions o;
  o.preset = "gsm8k";
  FormatReward gsm(o);
  auto r = gsm.score(make_group({"work\n#### 1,234\n", "work #### 12", "#### -3.5"}));
  EXPECT_EQ(r[0].score, 1.0);
  EXPECT_EQ(r[1].score, 0.0);
  EXPECT_EQ(r[1].explanation, "format mismatch (gsm8k): not found");
  EXPECT_EQ(r[2].score, 1.0);
  o.preset = "boxed";
  FormatReward boxed(o);
  r = boxed.score(make_group({"so \\boxed{3}", "so 3"}));
  EXPECT_EQ(r[0].score, 1.0);
  EXPECT_EQ(r[1].score, 0.0);
}

TEST(FormatReward, UserPatternFullOrSearchWithUnicode) {
  FormatRewardOptions o;
  o.pattern = "\\w+ \\d+";
  FormatReward full(o);
  auto r = full.score(make_group({"naïve 12", "say: naïve 12", "\xff\xfe 12"}));
  EXPECT_EQ(r[0].score, 1.0);  // \w knows ï (Unicode properties)
  EXPECT_EQ(r[0].explanation, "format ok");
  EXPECT_EQ(r[1].score, 0.0);
  EXPECT_EQ(r[1].explanation, "format mismatch: pattern /\\w+ \\d+/ does not match the whole completion");
  EXPECT_EQ(r[2].score, 0.0);  // invalid UTF-8 does not match, and is no error
  o.match = "search";
  FormatReward search(o);
  EXPECT_EQ(search.score(make_group({"say: naïve 12"}))[0].score, 1.0);
  EXPECT_EQ(search.score(make_group({"nothing"}))[0].explanation,
            "format mismatch: pattern /\\w+ \\d+/ not found");

  FormatRewardOptions ci;
  ci.pattern = "réponse: .*";
  ci.case_insensitive = true;
  EXPECT_EQ(FormatReward(ci).score(make_group({"RÉPONSE: oui\net non"}))[0].score, 1.0);
}

TEST(FormatReward, RunawayPatternIsAMissingScoreNotAHang) {
  FormatRewardOptions o;
  o.pattern = "(a|aa)+$";
  o.match = "search";
  FormatReward reward(o);
  auto r = reward.score(make_group({std::string(200, 'a') + "!", "aa"}));
  EXPECT_FALSE(r[0].score.has_value());
  EXPECT_NE(r[0].missing_reason.find("format regex failed on this completion: "), std::string::npos)
      << r[0].missing_reason;
  EXPECT_EQ(r[1].score, 1.0);
}

TEST(FormatReward, OptionErrors) {
  FormatRewardOptions o;
  EXPECT_EQ(error_of([&] { FormatReward r(o); }),
            "neither option 'preset' nor 'pattern' is set; set one (presets: think_answer, think, boxed, gsm8k)");
  o.preset = "think_answer";
  o.pattern = "x";
  EXPECT_EQ(error_of([&] { FormatReward r(o); }),
            "options 'preset' and 'pattern' are both set; keep one (presets: think_answer, think, boxed, gsm8k)");
  o = {};
  o.preset = "xml";
  EXPECT_EQ(error_of([&] { FormatReward r(o); }),
            "option 'preset' is 'xml'; use one of: think_answer, think, boxed, gsm8k");
  o = {};
  o.pattern = "(unclosed";
  EXPECT_EQ(error_of([&] { FormatReward r(o); }),
            "option 'pattern': invalid regular expression /(unclosed/ at offset 9: missing closing parenthesis");
  o = {};
  o.pattern = "x";
  o.match = "partial";
  EXPECT_EQ(error_of([&] { FormatReward r(o); }),
            "option 'match' is 'partial'; use \"full\" (the whole completion) or \"search\" (anywhere in it)");
}

// ---- keywords ----

TEST(KeywordReward, CoverageWithWholeWordsAndCaseFolding) {
  KeywordReward reward;
  Json record = {{"keywords", {"Paris", "Eiffel Tower", "C++"}}};
  auto r = reward.score(make_group({"I write C++ in PARIS, by the eiffel tower.", "paris has the Eiffel Tower",
                                    "Parisian towers", ""},
                                   record));
  EXPECT_EQ(r[0].score, 1.0);
  EXPECT_EQ(r[0].explanation, "all 3 keywords present");
  EXPECT_DOUBLE_EQ(*r[1].score, 2.0 / 3.0);
  EXPECT_EQ(r[1].explanation, "2/3 keywords present; missing: C++");
  EXPECT_EQ(r[2].score, 0.0);
  EXPECT_EQ(r[2].explanation, "0/3 keywords present; missing: Paris, Eiffel Tower, C++");
  EXPECT_EQ(r[3].score, 0.0);
}

TEST(KeywordReward, OptionsAndCommaSeparatedField) {
  Json record = {{"must", "cat, Émile,, cat "}};  // duplicates and blanks dropped: {cat, Émile}
  KeywordRewardOptions o;
  o.field = "must";
  auto r = KeywordReward(o).score(make_group({"concatenate émile"}, record));
  EXPECT_DOUBLE_EQ(*r[0].score, 0.5);
  EXPECT_EQ(r[0].explanation, "1/2 keywords present; missing: cat");
  o.whole_word = false;
  EXPECT_EQ(KeywordReward(o).score(make_group({"concatenate émile"}, record))[0].score, 1.0);
  o.case_sensitive = true;
  EXPECT_EQ(KeywordReward(o).score(make_group({"concatenate émile"}, record))[0].explanation,
            "1/2 keywords present; missing: Émile");
}

TEST(KeywordReward, RecordChecks) {
  KeywordReward reward;
  EXPECT_EQ(error_of([&] { reward.check_record({{"text", "x"}}, "", "kw.jsonl:5"); }),
            "kw.jsonl:5: keywords reward needs the record field 'keywords' (a list of strings or a comma-separated "
            "string) but the record has none; add it or set the reward's option 'field'");
  EXPECT_EQ(error_of([&] { reward.check_record({{"keywords", 3}}, "", "kw.jsonl:6"); }),
            "kw.jsonl:6: record field 'keywords' must be a list of strings or a comma-separated string, got number");
  EXPECT_EQ(error_of([&] { reward.check_record({{"keywords", " , "}}, "", "kw.jsonl:7"); }),
            "kw.jsonl:7: record field 'keywords' holds no keywords");
  EXPECT_THROW(reward.score(make_group({"x"}, {{"other", 1}})), Error);
}

// ---- length ----

TEST(LengthReward, DapoOverlongFormulaAtTheBoundaries) {
  // The paper's setting: L_max = 20480, L_cache = 4096, so no penalty up to 16384.
  EXPECT_EQ(dapo_overlong_penalty(0, 20480, 4096), 0.0);
  EXPECT_EQ(dapo_overlong_penalty(16384, 20480, 4096), 0.0);
  EXPECT_DOUBLE_EQ(dapo_overlong_penalty(16385, 20480, 4096), -1.0 / 4096.0);
  EXPECT_DOUBLE_EQ(dapo_overlong_penalty(18432, 20480, 4096), -0.5);
  EXPECT_DOUBLE_EQ(dapo_overlong_penalty(20480, 20480, 4096), -1.0);
  EXPECT_EQ(dapo_overlong_penalty(20481, 20480, 4096), -1.0);
  EXPECT_EQ(dapo_overlong_penalty(100000, 20480, 4096), -1.0);
}

TEST(LengthReward, OverlongScoresAndExplanations) {
  LengthRewardOptions o;
  o.max_length = 20;
  o.cache_length = 5;
  LengthReward reward(o);
  auto r = reward.score(test::make_length_group({0, 15, 16, 18, 20, 21}, 512));
  EXPECT_EQ(r[0].score, 0.0);
  EXPECT_EQ(r[1].score, 0.0);
  EXPECT_EQ(r[1].explanation, "length 15 <= 15 tokens: no penalty");
  EXPECT_DOUBLE_EQ(*r[2].score, -0.2);
  EXPECT_EQ(r[2].explanation, "length 16 in the overlong cache (15, 20] tokens: -0.2");
  EXPECT_DOUBLE_EQ(*r[3].score, -0.6);
  EXPECT_DOUBLE_EQ(*r[4].score, -1.0);
  EXPECT_EQ(r[5].score, -1.0);
  EXPECT_EQ(r[5].explanation, "length 21 > 20 tokens: -1");
}

TEST(LengthReward, DefaultsComeFromTheGroup) {
  LengthRewardOptions o;
  o.penalty_factor = 0.5;
  LengthReward reward(o);  // L_max = max_new_tokens = 100, L_cache = 20
  auto r = reward.score(test::make_length_group({80, 81, 90, 100, 101}, 100));
  EXPECT_EQ(r[0].score, 0.0);
  EXPECT_DOUBLE_EQ(*r[1].score, -0.5 * 0.05);
  EXPECT_DOUBLE_EQ(*r[2].score, -0.5 * 0.5);
  EXPECT_DOUBLE_EQ(*r[3].score, -0.5);
  EXPECT_DOUBLE_EQ(*r[4].score, -0.5);
  EXPECT_EQ(error_of([&] { reward.score(test::make_length_group({1}, 0)); }),
            "length reward: option 'max_length' is 0 and the group has no max_new_tokens; set max_length");
}

TEST(LengthReward, LinearPenaltyAndBonus) {
  LengthRewardOptions o;
  o.mode = "linear";
  o.max_length = 10;
  auto r = LengthReward(o).score(test::make_length_group({0, 5, 10, 20}, 0));
  EXPECT_EQ(r[0].score, 0.0);
  EXPECT_DOUBLE_EQ(*r[1].score, -0.5);
  EXPECT_EQ(r[1].explanation, "length 5 of 10 tokens: -0.5");
  EXPECT_DOUBLE_EQ(*r[2].score, -1.0);
  EXPECT_DOUBLE_EQ(*r[3].score, -1.0);
  o.coef = 0.2;
  o.unit = "chars";
  r = LengthReward(o).score(make_group({"hello", "héllo"}));  // é is two bytes
  EXPECT_DOUBLE_EQ(*r[0].score, 0.1);
  EXPECT_DOUBLE_EQ(*r[1].score, 0.12);
  EXPECT_EQ(r[0].explanation, "length 5 of 10 chars: 0.1");
}

TEST(LengthReward, TextWithoutTokenIdsIsMissingAndOptionsAreChecked) {
  RewardGroup g = make_group({"abc"}, {}, "", 10);
  g.samples[0].completion_ids.clear();
  auto r = LengthReward().score(g);
  EXPECT_FALSE(r[0].score);
  EXPECT_EQ(r[0].missing_reason, "length reward: the completion has text but no token ids (use unit = \"chars\")");

  LengthRewardOptions o;
  o.max_length = 10;
  o.cache_length = 10;
  EXPECT_EQ(error_of([&] { LengthReward x(o); }), "option 'cache_length' (10) must be smaller than 'max_length' (10)");
  o = {};
  o.mode = "quadratic";
  EXPECT_EQ(error_of([&] { LengthReward x(o); }),
            "option 'mode' is 'quadratic'; use \"overlong\" (DAPO soft overlong punishment) or \"linear\"");
}

}  // namespace
}  // namespace rlf

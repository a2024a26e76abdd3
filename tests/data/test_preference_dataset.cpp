// Preference data: prompt/chosen/rejected files, HH-RLHF dialogues split at
// the last shared assistant turn (the real shipped test set among them), the
// synthetic arithmetic pairs (chosen verified correct, rejected wrong), the
// held-out split, and errors naming the record or the key.
#include <gtest/gtest.h>

#include <set>

#include "data/preference_dataset.h"
#include "tests/data/data_fixtures.h"
#include "tests/support/test_env.h"

namespace rlf {
namespace {

TEST(PreferenceDataset, GenericFileWithTemplateAndHeldOutPairs) {
  test::TempDir dir;
  PreferenceDatasetOptions o;
  o.path = test::write_fixture(dir, "p.jsonl",
                               "{\"q\": \"2+2?\", \"good\": \"4\", \"bad\": \"5\"}\n"
                               "{\"q\": \"3+3?\", \"good\": \"6\", \"bad\": \"7\"}\n"
                               "{\"q\": \"4+4?\", \"good\": \"8\", \"bad\": \"9\"}\n");
  o.prompt_field = "q";
  o.chosen_field = "good";
  o.rejected_field = "bad";
  o.prompt_template = "Q: {prompt}\nA:";
  o.eval_size = 1;
  PreferenceDataset ds = PreferenceDataset::load(o);
  ASSERT_EQ(ds.train().size(), 2u);
  ASSERT_EQ(ds.eval().size(), 1u);
  EXPECT_EQ(ds.train()[0].prompt, "Q: 2+2?\nA:");
  EXPECT_EQ(ds.train()[0].chosen, "4");
  EXPECT_EQ(ds.train()[0].rejected, "5");
  EXPECT_EQ(ds.eval()[0].prompt, "Q: 4+4?\nA:");
  EXPECT_EQ(ds.train()[1].id, "p.jsonl:2");
}

TEST(PreferenceDataset, BadRecordsNameTheLineOrAreSkipped) {
  test::TempDir dir;
  PreferenceDatasetOptions o;
  o.path = test::write_fixture(dir, "p.jsonl",
                               "{\"prompt\": \"a\", \"chosen\": \"x\", \"rejected\": \"y\"}\n"
                               "{\"prompt\": \"b\", \"chosen\": \"x\"}\n"
                               "{\"prompt\": \"c\", \"chosen\": \"z\", \"rejected\": \"z\"}\n");
  const std::string e = test::error_of([&] { PreferenceDataset::load(o); });
  EXPECT_NE(e.find("line 2"), std::string::npos) << e;
  EXPECT_NE(e.find("rejected"), std::string::npos) << e;
  o.on_bad_record = "skip";
  PreferenceDataset ds = PreferenceDataset::load(o);
  EXPECT_EQ(ds.train().size(), 1u);
  EXPECT_EQ(ds.n_skipped(), 2u);
  o.eval_size = 1;
  EXPECT_NE(test::error_of([&] { PreferenceDataset::load(o); }).find("lower preference.data.eval_size"), std::string::npos);
}

TEST(PreferenceDataset, HhRlhfDialoguesSplitAtTheLastSharedAssistantTurn) {
  const PreferenceExample e = split_shared_dialogue("\n\nHuman: hi\n\nAssistant: hello\n\nHuman: joke?\n\nAssistant: A pun.",
                                                    "\n\nHuman: hi\n\nAssistant: hello\n\nHuman: joke?\n\nAssistant: No.",
                                                    "here");
  EXPECT_EQ(e.prompt, "\n\nHuman: hi\n\nAssistant: hello\n\nHuman: joke?\n\nAssistant:");
  EXPECT_EQ(e.chosen, " A pun.");
  EXPECT_EQ(e.rejected, " No.");
  // Responses that share their first words still split at the turn, not inside it.
  const PreferenceExample f = split_shared_dialogue("\n\nHuman: q\n\nAssistant: I think yes", "\n\nHuman: q\n\nAssistant: I think no", "x");
  EXPECT_EQ(f.chosen, " I think yes");
  EXPECT_NE(test::error_of([] { split_shared_dialogue("\n\nHuman: a", "\n\nHuman: b", "rec 3"); }).find("rec 3"),
            std::string::npos);
  // The shipped HH-RLHF harmless-base test set: every record splits.
  PreferenceDatasetOptions o;
  o.preset = "hh-rlhf";
  o.path = test::shared_path("data/hh-rlhf/harmless-base-test.jsonl.gz").string();
  o.on_bad_record = "skip";
  PreferenceDataset ds = PreferenceDataset::load(o);
  EXPECT_GE(ds.train().size(), 2250u) << ds.summary();
  for (const auto& p : ds.train()) {
    ASSERT_GE(p.prompt.size(), 12u);
    EXPECT_EQ(p.prompt.substr(p.prompt.size() - 12), "\n\nAssistant:");
    EXPECT_NE(p.chosen, p.rejected);
  }
}

TEST(PreferenceDataset, ArithmeticPairsPreferTheCorrectAnswer) {
  PreferenceDatasetOptions o;
  o.preset = "arithmetic";
  o.prompt_template = "{prompt}";
  o.arithmetic.n_problems = 300;
  o.arithmetic.operations = "+";
  o.eval_size = 50;
  PreferenceDataset ds = PreferenceDataset::load(o);
  EXPECT_EQ(ds.train().size() + ds.eval().size(), 300u);
  std::set<std::string> prompts;
  for (const auto* split : {&ds.train(), &ds.eval()})
    for (const auto& p : *split) {
      prompts.insert(p.prompt);
      // "What is a + b?" -> chosen "a + b = s. #### s", rejected another sum.
      int64_t a = 0, b = 0, s = 0, wrong = 0;
      ASSERT_EQ(std::sscanf(p.chosen.c_str(), "%ld + %ld = %ld", &a, &b, &s), 3) << p.chosen;
      EXPECT_EQ(a + b, s) << p.chosen;
      EXPECT_NE(p.chosen.find("#### " + std::to_string(s)), std::string::npos);
      ASSERT_EQ(std::sscanf(p.rejected.c_str(), "%ld + %ld = %ld", &a, &b, &wrong), 3) << p.rejected;
      EXPECT_NE(wrong, s) << p.rejected;
    }
  EXPECT_EQ(prompts.size(), 300u) << "distinct problems: the held-out ones are unseen";
  o.wrong_style = "drop_carry";
  PreferenceDataset carry = PreferenceDataset::load(o);
  EXPECT_LT(carry.train().size() + carry.eval().size(), 300u) << "only problems with a carry have a wrong answer";
  o.wrong_style = "sideways";
  EXPECT_NE(test::error_of([&] { PreferenceDataset::load(o); }).find("wrong_style"), std::string::npos);
}

TEST(PreferenceDataset, OptionsFromATableNameUnknownKeys) {
  const std::string e = test::error_of(
      [] { preference_dataset_options_from_json(Json{{"path", "x"}, {"chossen_field", "c"}}, "cfg [preference.data]"); });
  EXPECT_NE(e.find("unknown key 'chossen_field'"), std::string::npos) << e;
  EXPECT_NE(e.find("cfg [preference.data]"), std::string::npos) << e;
  EXPECT_NE(test::error_of([] { preference_dataset_options_from_json(Json{{"preset", "dpo"}}, "cfg"); }).find("preset"),
            std::string::npos);
}

}  // namespace
}  // namespace rlf

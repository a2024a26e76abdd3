// Preference data: prompt/chosen/rejected files, HH-RLHF dialogues split at
// the last shared assistant turn (the real shipped test set among them), the
// synthetic arithmetic pairs (chosen verified correct, rejected wrong), the
// held-out split, per-attribute ratings (from files and the rated
// arithmetic preset), and errors naming the record or the key.
#include <gtest/gtest.h>

#include <map>
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

TEST(PreferenceDataset, RatingsComeFromRecordsAndErrorsNameTheField) {
  test::TempDir dir;
  PreferenceDatasetOptions o;
  o.path = test::write_fixture(dir, "p.jsonl",
                               "{\"prompt\": \"a\", \"chosen\": \"x\", \"rejected\": \"y\", "
                               "\"chosen_ratings\": {\"helpful\": 4, \"safe\": 1}, \"rejected_ratings\": {\"helpful\": 2.5}}\n"
                               "{\"prompt\": \"b\", \"chosen\": \"x\", \"rejected\": \"y\"}\n");
  PreferenceDataset ds = PreferenceDataset::load(o);
  ASSERT_EQ(ds.train().size(), 2u);
  EXPECT_EQ(ds.train()[0].chosen_ratings, (std::map<std::string, double>{{"helpful", 4.0}, {"safe", 1.0}}));
  EXPECT_EQ(ds.train()[0].rejected_ratings, (std::map<std::string, double>{{"helpful", 2.5}}));
  EXPECT_TRUE(ds.train()[1].chosen_ratings.empty()) << "a record without ratings rates nothing";
  o.path = test::write_fixture(dir, "bad.jsonl",
                               "{\"prompt\": \"a\", \"chosen\": \"x\", \"rejected\": \"y\", "
                               "\"rejected_ratings\": {\"helpful\": \"high\"}}\n");
  const std::string e = test::error_of([&] { PreferenceDataset::load(o); });
  EXPECT_NE(e.find("line 1"), std::string::npos) << e;
  EXPECT_NE(e.find("'rejected_ratings.helpful' must be a finite number"), std::string::npos) << e;
}

TEST(PreferenceDataset, RatedArithmeticPairsAskForAStyleAndRateThreeAttributes) {
  PreferenceDatasetOptions o;
  o.preset = "arithmetic";
  o.rated = true;
  o.prompt_template = "{prompt}";
  o.arithmetic.n_problems = 400;
  o.arithmetic.operations = "+";
  PreferenceDataset ds = PreferenceDataset::load(o);
  ASSERT_EQ(ds.train().size(), 400u);
  int64_t work = 0, style_pairs = 0;
  for (const PreferenceExample& p : ds.train()) {
    const bool asks_work = p.prompt.find(" Show your work.") != std::string::npos;
    EXPECT_NE(asks_work, p.prompt.find(" Answer only.") != std::string::npos) << p.prompt;
    work += asks_work;
    // The chosen response is right in the asked style.
    EXPECT_EQ(p.chosen_ratings.at("correct"), 1.0);
    EXPECT_EQ(p.chosen_ratings.at("worked"), asks_work ? 1.0 : 0.0);
    EXPECT_EQ(p.chosen_ratings.at("short"), 1.0 - p.chosen_ratings.at("worked"));
    EXPECT_EQ(p.chosen.find(" = ") != std::string::npos, asks_work) << p.chosen;
    // The rejected one is right in the other style, or wrong in the asked one.
    const bool style = p.rejected_ratings.at("correct") == 1.0;
    style_pairs += style;
    EXPECT_EQ(p.rejected_ratings.at("worked"), style ? 1.0 - p.chosen_ratings.at("worked") : p.chosen_ratings.at("worked"));
    EXPECT_EQ(p.rejected.find(" = ") != std::string::npos, p.rejected_ratings.at("worked") == 1.0) << p.rejected;
    const std::string answer = p.chosen.substr(p.chosen.find("#### "));
    EXPECT_EQ(p.rejected.find(answer) != std::string::npos, style) << p.chosen << " | " << p.rejected;
  }
  // Seeded halves.
  EXPECT_GT(work, 160);
  EXPECT_LT(work, 240);
  EXPECT_GT(style_pairs, 160);
  EXPECT_LT(style_pairs, 240);
  EXPECT_EQ(PreferenceDataset::load(o).train()[7].prompt, ds.train()[7].prompt) << "the same seed, the same pairs";
  EXPECT_NE(test::error_of([&] { preference_dataset_options_from_json(Json{{"preset", "arithmetic"}, {"rated", true},
                                                                          {"worked", false}},
                                                                     "cfg"); })
                .find("rated = true shows both styles"),
            std::string::npos);
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

// Decontamination: words and n-grams by hand, the overlap formula and the
// threshold on hand-counted examples, the report naming the matching
// evaluation item, evaluation sets read as "path", "preset:path" or tables,
// and errors naming the curation.* key.
#include <gtest/gtest.h>

#include "data/decontamination.h"
#include "tests/data/data_fixtures.h"

namespace rlf {
namespace {

using test::error_of;

PromptExample prompt(const std::string& id, const std::string& text) {
  PromptExample p;
  p.id = id;
  p.raw_prompt = text;
  p.prompt = "Q: " + text;  // the template is not compared
  p.where = id;
  return p;
}

std::vector<EvalText> two_items() {
  return {{"eval.jsonl", "e0", "The cat sat on the mat."}, {"eval.jsonl", "e1", "A dog ran in the park."}};
}

TEST(Decontamination, WordsAreLowerCasedLetterAndDigitRuns) {
  EXPECT_EQ(ngram_words("What's 2+2? The ANSWER,is 4."),
            (std::vector<std::string>{"what", "s", "2", "2", "the", "answer", "is", "4"}));
  EXPECT_TRUE(ngram_words(" ...  ").empty());
  // Distinct n-grams only: "a b c a b" has the bigrams ab, bc, ca.
  EXPECT_EQ(ngram_hashes("a b c a b", 2).size(), 3u);
  EXPECT_EQ(ngram_hashes("a b a b", 2).size(), 2u);
  EXPECT_TRUE(ngram_hashes("a b", 3).empty());
  EXPECT_EQ(ngram_hashes("A, B!", 2), ngram_hashes("a b", 2));
}

TEST(Decontamination, OverlapIsTheShareOfThePromptsNgramsFoundInTheEvalItems) {
  NgramIndex index(two_items(), 3);
  // Trigrams: the cat sat | cat sat on | sat on a | on a log; the first two are in e0.
  OverlapMatch m = index.match("the cat sat on a log");
  EXPECT_EQ(m.n_ngrams, 4);
  EXPECT_EQ(m.n_shared, 2);
  EXPECT_DOUBLE_EQ(m.overlap, 0.5);
  EXPECT_EQ(m.item, 0);
  EXPECT_EQ(m.n_shared_item, 2);
  // yesterday a dog | a dog ran | dog ran in | ran in the | in the park | the park quickly: 4 of 6 in e1.
  m = index.match("Yesterday a dog ran in the park quickly");
  EXPECT_EQ(m.n_ngrams, 6);
  EXPECT_EQ(m.n_shared, 4);
  EXPECT_DOUBLE_EQ(m.overlap, 4.0 / 6.0);
  EXPECT_EQ(m.item, 1);
  // Shared with both items, 2 each: the first item is named.
  m = index.match("the cat sat on ran in the park");
  EXPECT_EQ(m.n_shared, 4);
  EXPECT_EQ(m.item, 0);
  EXPECT_EQ(m.n_shared_item, 2);
  m = index.match("nothing in common at all");
  EXPECT_EQ(m.n_shared, 0);
  EXPECT_EQ(m.item, -1);
}

TEST(Decontamination, PromptsAboveTheThresholdAreDroppedAndReported) {
  const std::vector<PromptExample> train = {prompt("p1", "the cat sat on a log"),
                                            prompt("p2", "Yesterday a dog ran in the park quickly"),
                                            prompt("p3", "hello world"), prompt("p4", "a completely new sentence here")};
  DecontaminationOptions o;
  o.sources = {"eval.jsonl"};
  o.ngram = 3;
  o.overlap_threshold = 0.0;  // any shared trigram
  DecontaminationResult r = decontaminate(train, two_items(), o);
  ASSERT_EQ(r.kept.size(), 2u);
  EXPECT_EQ(r.kept[0].id, "p3");  // too short to compare: kept, counted
  EXPECT_EQ(r.kept[1].id, "p4");
  EXPECT_EQ(r.n_checked, 4);
  EXPECT_EQ(r.n_dropped(), 2);
  EXPECT_EQ(r.n_too_short, 1);
  const Json& d = r.report["dropped"];
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[0]["id"], "p1");
  EXPECT_EQ(d[0]["eval_id"], "e0");
  EXPECT_EQ(d[0]["n_shared_with_eval_item"], 2);
  EXPECT_DOUBLE_EQ(d[0]["overlap"].get<double>(), 0.5);
  EXPECT_EQ(d[1]["id"], "p2");
  EXPECT_EQ(d[1]["eval_id"], "e1");
  EXPECT_EQ(d[1]["eval_text"], "A dog ran in the park.");
  EXPECT_EQ(r.report["n_dropped"], 2);
  EXPECT_EQ(r.report["n_eval_items"], 2);
  EXPECT_EQ(r.report["eval_items_per_source"]["eval.jsonl"], 2);
  EXPECT_EQ(r.summary(),
            "decontamination: 2 of 4 training prompts dropped (3-gram overlap > 0 with 2 evaluation items); 1 too "
            "short to compare");

  // Overlap must exceed the threshold: 0.5 stays at 0.5, 4/6 goes.
  o.overlap_threshold = 0.5;
  r = decontaminate(train, two_items(), o);
  ASSERT_EQ(r.n_dropped(), 1);
  EXPECT_EQ(r.report["dropped"][0]["id"], "p2");
  o.overlap_threshold = 0.7;
  EXPECT_EQ(decontaminate(train, two_items(), o).n_dropped(), 0);
}

TEST(Decontamination, EvalSetsLoadAsPathPresetPathOrTable) {
  test::TempDir dir;
  const std::string gsm = test::write_fixture(dir, "test.jsonl",
                                              R"({"question": "Tom has 3 apples.", "answer": "#### 3"})" "\n"
                                              R"({"question": "Sue has 5 pears.", "answer": "#### 5"})" "\n");
  const std::string plain = test::write_fixture(dir, "plain.jsonl", R"({"prompt": "Write a poem."})" "\n");
  const std::string mbpp = test::write_fixture(dir, "mbpp.jsonl", R"({"text": "Sort a list.", "task_id": 7})" "\n");
  DecontaminationOptions o;
  o.sources = Json::array({"gsm8k:" + gsm, plain, {{"path", mbpp}, {"prompt_field", "text"}, {"id_field", "task_id"}}});
  std::vector<EvalText> t = load_eval_texts(o);
  ASSERT_EQ(t.size(), 4u);
  EXPECT_EQ(t[0].text, "Tom has 3 apples.");
  EXPECT_EQ(t[0].source, gsm);
  EXPECT_EQ(t[1].text, "Sue has 5 pears.");
  EXPECT_EQ(t[2].text, "Write a poem.");
  EXPECT_EQ(t[3].text, "Sort a list.");
  EXPECT_EQ(t[3].id, "7");
}

TEST(Decontamination, ErrorsNameTheKey) {
  DecontaminationOptions o;
  o.sources = Json::array({3});
  EXPECT_EQ(error_of([&] { load_eval_texts(o); }),
            "curation.decontaminate[0] must be a string (\"path\" or \"preset:path\") or a "
            "table like [data] (got 3)");
  o.sources = Json::array({"/no/such/file.jsonl"});
  EXPECT_NE(error_of([&] { load_eval_texts(o); }).find("curation.decontaminate[0]: "), std::string::npos);
  o.ngram = 0;
  EXPECT_EQ(error_of([&] { o.validate(); }), "curation.ngram must be >= 1 (got 0; 13 is GPT-3's and Llama's choice)");
  o.ngram = 13;
  o.overlap_threshold = 1.0;
  EXPECT_EQ(error_of([&] { o.validate(); }),
            "curation.overlap_threshold must be in [0, 1) (got 1; 0 drops a prompt sharing any n-gram with an "
            "evaluation item)");
}

}  // namespace
}  // namespace rlf

// BLEU, chrF and ROUGE-L rewards: values worked out by hand, and agreement
// with the Python packages the field uses (sacrebleu 2.x sentence_bleu and
// CHRF(), rouge_score's RougeScorer(["rougeL"])) on a shipped set of 40 pairs
// that exercise 13a tokenization (punctuation, numbers, dashes, entities,
// <skipped>, line breaks), Unicode, empty and one-token hypotheses.
#include <gtest/gtest.h>

#include <fstream>

#include "rewards/registry.h"
#include "rewards/text_overlap.h"
#include "tests/support/test_env.h"

namespace rlf {
namespace {

TEST(TextOverlap, HandValues) {
  EXPECT_EQ(tokenize_13a("Hello, world! It costs $3.14."), "Hello , world ! It costs $ 3.14 .");
  EXPECT_EQ(tokenize_13a("5-6 co-operate &amp; \"q\""), "5 - 6 co-operate & \" q \"");
  EXPECT_DOUBLE_EQ(sentence_bleu("the cat is on the mat", "the cat is on the mat"), 1.0);
  EXPECT_EQ(sentence_bleu("", "the cat"), 0.0);
  EXPECT_EQ(sentence_bleu("dog", "the cat"), 0.0);  // no match at all
  // "the cat" vs "the cat sat": 1-grams 2/2, 2-grams 1/1, effective order 2, BP exp(1 - 3/2).
  EXPECT_NEAR(sentence_bleu("the cat", "the cat sat"), std::exp(1 - 1.5), 1e-12);
  EXPECT_DOUBLE_EQ(sentence_chrf("abc", "abc"), 1.0);
  EXPECT_EQ(sentence_chrf("xyz", "abc"), 0.0);
  // ROUGE-L: LCS("a b c d", "a c d e") = 3 -> P 3/4, R 3/4.
  const RougeScore r = rouge_l("a b c d", "a c d e");
  EXPECT_DOUBLE_EQ(r.precision, 0.75);
  EXPECT_DOUBLE_EQ(r.recall, 0.75);
  EXPECT_DOUBLE_EQ(r.f, 0.75);
  EXPECT_EQ(rouge_l("!!!", "a").f, 0.0);
}

TEST(TextOverlap, RewardsScoreAgainstTheReferenceOrAField) {
  RewardGroup g;
  g.reference = "the cat is on the mat";
  g.record = Json{{"gold", "a c d e"}};
  g.samples = {RewardSample{}, RewardSample{}};
  g.samples[0].completion = "the cat is on the mat";
  g.samples[1].completion = "a b c d";
  auto bleu = make_reward("bleu", Json::object(), "cfg");
  auto s = bleu->score(g);
  EXPECT_DOUBLE_EQ(*s[0].score, 1.0);
  EXPECT_EQ(s[0].explanation, "bleu 1.000 against the reference");
  auto rouge = make_reward("rouge_l", Json{{"field", "gold"}, {"measure", "recall"}}, "cfg");
  EXPECT_DOUBLE_EQ(*rouge->score(g)[1].score, 0.75);
  EXPECT_NE(test::error_of([&] { bleu->check_record(Json::object(), "", "data.jsonl line 3"); }).find("data.jsonl line 3"),
            std::string::npos);
  EXPECT_NE(test::error_of([] { make_reward("chrf", Json{{"measure", "f"}}, "cfg"); }).find("measure"), std::string::npos);
  EXPECT_NE(test::error_of([] { make_reward("rouge_l", Json{{"measure", "f2"}}, "cfg"); }).find("measure"),
            std::string::npos);
}

constexpr const char* kOracle = R"PY(
import json, sys
import sacrebleu
from sacrebleu.metrics import CHRF
from rouge_score import rouge_scorer
chrf = CHRF()
rouge = rouge_scorer.RougeScorer(["rougeL"])
out = []
for line in open(sys.argv[1], encoding="utf-8"):
    p = json.loads(line)
    h, r = p["hypothesis"], p["reference"]
    s = rouge.score(r, h)["rougeL"]
    out.append({"bleu": sacrebleu.sentence_bleu(h, [r]).score / 100, "chrf": chrf.sentence_score(h, [r]).score / 100,
                "rouge_p": s.precision, "rouge_r": s.recall, "rouge_f": s.fmeasure})
print("RESULT" + json.dumps(out))
)PY";

TEST(TextOverlap, AgreesWithSacrebleuAndRougeScore) {
  RLF_REQUIRE_ORACLE();
  const std::string path = test::source_path("tests/rewards/data/text_pairs.jsonl").string();
  auto r = test::run_oracle_python(kOracle, test::shell_quote(path));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const size_t at = r.output.find("RESULT");
  ASSERT_NE(at, std::string::npos) << r.output;
  const Json want = Json::parse(r.output.substr(at + 6));
  std::ifstream in(path);
  std::string line;
  size_t i = 0;
  while (std::getline(in, line)) {
    const Json p = Json::parse(line);
    const std::string h = p["hypothesis"], ref = p["reference"];
    SCOPED_TRACE("pair " + std::to_string(i) + ": '" + h + "' vs '" + ref + "'");
    ASSERT_LT(i, want.size());
    EXPECT_NEAR(sentence_bleu(h, ref), want[i]["bleu"].get<double>(), 1e-9);
    EXPECT_NEAR(sentence_chrf(h, ref), want[i]["chrf"].get<double>(), 1e-9);
    const RougeScore rs = rouge_l(h, ref);
    EXPECT_NEAR(rs.precision, want[i]["rouge_p"].get<double>(), 1e-12);
    EXPECT_NEAR(rs.recall, want[i]["rouge_r"].get<double>(), 1e-12);
    EXPECT_NEAR(rs.f, want[i]["rouge_f"].get<double>(), 1e-12);
    ++i;
  }
  EXPECT_EQ(i, 40u);
  EXPECT_EQ(want.size(), 40u);
}

}  // namespace
}  // namespace rlf

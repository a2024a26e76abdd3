// Critique-to-token credit's parts: spans quoted by a critique found in the
// response, token offsets from the streaming decoder (exact on real
// byte-level BPE and SentencePiece tokenizers, multi-byte characters
// included), span scores on exactly the tokens that wrote the span, the
// column-addition critic's critiques and spans, and the credit formula on
// hand-computed values.
#include <gtest/gtest.h>

#include "algorithms/span_credit.h"
#include "data/examples.h"
#include "feedback/columns_critic.h"
#include "feedback/critique_spans.h"
#include "tests/support/test_env.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"

namespace rlf {
namespace {

TEST(CritiqueSpans, QuotesAreFoundInTheResponse) {
  const std::string response = "7+8=15, 3+4=7. #### 75; 3+4=7";
  int64_t unmatched = 0;
  const auto spans = spans_from_critique(
      "The tens column drops the carry.\nError: \"3+4=7\"\n  good : \"7+8=15\"\nERROR: \"3+4=7\"\n"
      "Error: \"3+5=8\"\nNote: \"7+8\"\nError: \"say \\\"hi\\\"\"",
      response, &unmatched);
  ASSERT_EQ(spans.size(), 3u);
  EXPECT_EQ(spans[0].begin, 8);
  EXPECT_EQ(spans[0].end, 13);
  EXPECT_EQ(spans[0].score, -1);
  EXPECT_EQ(spans[1].begin, 0);
  EXPECT_EQ(spans[1].end, 6);
  EXPECT_EQ(spans[1].score, 1);
  EXPECT_EQ(spans[2].begin, 24) << "the second quote of the same text takes its second occurrence";
  EXPECT_EQ(unmatched, 2) << "\"3+5=8\" and the escaped quote are not in the response; Note: is not a span line";
  EXPECT_TRUE(spans_from_critique("Error: \"unterminated", response).empty());
}

// Token k wrote decoded.text[begin[k], begin[k + 1]); the text is the
// tokenizer's own decode; a span's score lands on exactly the tokens whose
// characters overlap it.
TEST(CritiqueSpans, TokenOffsetsAreExactOnRealTokenizers) {
  const std::string text = "Lily's naïve café: 3+4=7 😀 done";
  for (const char* dir : {"qwen2.5", "llama3.2", "llama2"}) {
    SCOPED_TRACE(dir);
    const auto tok = load_tokenizer(test::shared_path(std::string("tokenizers/hf/") + dir).string());
    const std::vector<int32_t> ids = tok->encode(text, /*add_special=*/false);
    const DecodedTokens d = decode_with_offsets(*tok, ids);
    EXPECT_EQ(d.text, tok->decode(ids, /*skip_special=*/true));
    ASSERT_EQ(d.begin.size(), ids.size() + 1);
    for (size_t k = 0; k + 1 < d.begin.size(); ++k) EXPECT_LE(d.begin[k], d.begin[k + 1]);
    EXPECT_EQ(d.begin.back(), static_cast<int64_t>(d.text.size()));
    const size_t at = d.text.find("café");
    ASSERT_NE(at, std::string::npos);
    const CritiqueSpan span{.begin = static_cast<int64_t>(at), .end = static_cast<int64_t>(at + std::string("café").size()), .score = -1};
    const auto scores = token_scores(d, {span});
    std::string flagged;
    for (size_t k = 0; k < ids.size(); ++k) {
      const bool overlaps = d.begin[k] < span.end && span.begin < d.begin[k + 1];
      EXPECT_EQ(scores[k], overlaps ? -1.0f : 0.0f) << "token " << k;
      if (overlaps) flagged += d.text.substr(static_cast<size_t>(d.begin[k]), static_cast<size_t>(d.begin[k + 1] - d.begin[k]));
    }
    EXPECT_NE(flagged.find("café"), std::string::npos) << "the flagged tokens write the span: '" << flagged << "'";
    EXPECT_LE(flagged.size(), std::string(" café:").size() + 1) << "and not much more: '" << flagged << "'";
  }
}

Critique columns(int64_t a, int64_t b, const std::string& response) { return critique_columns(a, b, response); }

std::string span_text(const Critique& c, const std::string& response) {
  EXPECT_EQ(c.spans.size(), 1u) << c.text;
  if (c.spans.empty()) return "";
  return response.substr(static_cast<size_t>(c.spans[0].begin), static_cast<size_t>(c.spans[0].end - c.spans[0].begin));
}

TEST(ColumnsCritic, NamesTheFirstWrongColumnAndMarksIt) {
  // 37 + 48 = "7+8=15, 3+4+1=8. #### 85"; 95 + 39 = "5+9=14, 9+3+1=13. #### 134".
  std::string r = "7+8=15, 3+4=7. #### 75";
  Critique c = columns(37, 48, r);
  EXPECT_TRUE(c.ok);
  EXPECT_EQ(c.verdict, std::optional<bool>(false));
  EXPECT_EQ(c.text, "The tens column drops the carry: the units column gave 15, so it is 3+4+1=8, not 3+4=7.");
  EXPECT_EQ(span_text(c, r), "3+4=7");
  r = "7+8=15, 3+5+1=9. #### 95";
  c = columns(37, 48, r);
  EXPECT_EQ(c.text, "The tens column is wrong: it is 3+4+1=8, not 3+5+1=9.");
  EXPECT_EQ(span_text(c, r), "3+5+1=9");
  r = "7+8=16, 3+4+1=8. #### 86";
  EXPECT_EQ(span_text(columns(37, 48, r), r), "7+8=16");
  r = "5+9=14. #### 134";
  c = columns(95, 39, r);
  EXPECT_EQ(c.text, "The tens column is missing: it is 9+3+1=13.");
  EXPECT_EQ(span_text(c, r), "134");
  r = "7+8=15, 3+4+1=8, 0+0=0. #### 85";
  c = columns(37, 48, r);
  EXPECT_EQ(c.text, "There is no hundreds column: 37 + 48 has 2.");
  EXPECT_EQ(span_text(c, r), "0+0=0");
  r = "7+8=15, 3+4+1=8. #### 58";
  c = columns(37, 48, r);
  EXPECT_EQ(c.text, "The columns are right but the answer does not read them: it is 85.");
  EXPECT_EQ(span_text(c, r), "58");
  c = columns(37, 48, "7+8=15, 3+4+1=8.");
  EXPECT_EQ(c.text, "End with the answer after ####: it is 85.");
  EXPECT_TRUE(c.spans.empty());
  c = columns(37, 48, "7+8=15, 3+4+1=8. #### 85");
  EXPECT_EQ(c.text, "Correct.");
  EXPECT_EQ(c.verdict, std::optional<bool>(true));
  EXPECT_TRUE(c.spans.empty());

  ColumnsCritic critic;
  PromptExample add, sub;
  add.record = {{"a", 37}, {"b", 48}, {"op", "+"}};
  sub.record = {{"a", 37}, {"b", 8}, {"op", "-"}};
  sub.where = "arithmetic #2";
  CritiqueRequest ra, rs;
  ra.task = &add, ra.response = "7+8=15, 3+4=7. #### 75";
  rs.task = &sub, rs.response = "29";
  const auto out = critic.critique({ra, rs});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(span_text(out[0], ra.response), "3+4=7");
  EXPECT_FALSE(out[1].ok);
  EXPECT_NE(out[1].error.find("not an addition record"), std::string::npos) << out[1].error;
}

TEST(SpanCredit, AddsCoefTimesScoreOnMarkedPolicyTokens) {
  std::vector<float> adv = {0.0f, -0.5f, -0.5f, -0.5f, 0.0f};
  const std::vector<float> weight = {0, 1, 1, 1, 0}, score = {-1, -1, 0, 1, -1};
  EXPECT_EQ(algo::add_span_credit(adv, weight, score, 0.25), 2);
  EXPECT_EQ(adv, (std::vector<float>{0.0f, -0.75f, -0.5f, -0.25f, 0.0f}));
  EXPECT_THROW(algo::add_span_credit(adv, weight, std::vector<float>(4, 0.0f), 1.0), Error);
}

}  // namespace
}  // namespace rlf

// The character-level tokenizer rlf writes for models it builds itself: one
// id per character, <s> prepended, text round-trips; Hugging Face tokenizers
// reads the same file and gives the same ids and text (oracle Python).
#include <gtest/gtest.h>

#include "tests/support/test_env.h"
#include "tokenizer/char_vocab.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/json_util.h"

namespace rlf {
namespace {

TEST(CharVocab, OneIdPerCharacterAndRoundTrip) {
  test::TempDir dir;
  write_char_tokenizer(dir.path(), printable_ascii());
  auto tok = load_tokenizer((dir / "tokenizer.json").string());
  EXPECT_EQ(tok->vocab_size(), 3 + 95);
  EXPECT_EQ(tok->bos_id(), 1);
  EXPECT_EQ(tok->eos_id(), 2);
  const std::string text = "What is 37 + 48? #### 85";
  auto ids = tok->encode(text, /*add_special=*/true);
  ASSERT_EQ(ids.size(), text.size() + 1);
  EXPECT_EQ(ids[0], 1);
  for (size_t i = 0; i < text.size(); ++i) EXPECT_EQ(ids[i + 1], 3 + (text[i] - ' ')) << i;
  EXPECT_EQ(tok->decode(ids, /*skip_special=*/true), text);
  EXPECT_EQ(tok->encode(text, false).size(), text.size());
}

TEST(CharVocab, BadAlphabetsAreErrors) {
  EXPECT_THROW(char_tokenizer_json(""), Error);
  EXPECT_THROW(char_tokenizer_json("abca"), Error);
  EXPECT_THROW(char_tokenizer_json("ab\n"), Error);
}

const char* kOracleScript = R"PY(
import sys, json
from tokenizers import Tokenizer
tok = Tokenizer.from_file(sys.argv[1])
for text in json.loads(sys.argv[2]):
    ids = tok.encode(text).ids
    print(json.dumps({"ids": ids, "text": tok.decode(ids, skip_special_tokens=True)}))
)PY";

TEST(CharVocab, HfTokenizersAgree) {
  RLF_REQUIRE_ORACLE();
  test::TempDir dir;
  write_char_tokenizer(dir.path(), printable_ascii());
  auto tok = load_tokenizer((dir / "tokenizer.json").string());
  std::vector<std::string> texts = {"What is 37 + 48?", "#### 85", "  two  spaces ~{}|\\\"'", "a"};
  auto r = test::run_oracle_python(kOracleScript, test::shell_quote((dir / "tokenizer.json").string()) + " " +
                                                      test::shell_quote(Json(texts).dump()));
  auto lines = split_lines(r.output);
  ASSERT_EQ(lines.size(), texts.size()) << r.output;
  for (size_t i = 0; i < texts.size(); ++i) {
    Json j = Json::parse(lines[i]);
    std::vector<int32_t> ids = tok->encode(texts[i], true);
    EXPECT_EQ(j["ids"].get<std::vector<int32_t>>(), ids) << texts[i];
    EXPECT_EQ(j["text"].get<std::string>(), texts[i]);
  }
}

}  // namespace
}  // namespace rlf

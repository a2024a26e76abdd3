// StreamDecoder: pushing ids one at a time yields exactly decode(all ids),
// never emits a partial UTF-8 character, and holds back incomplete bytes
// (byte-level BPE, byte fallback, llama2.c byte tokens).
#include <gtest/gtest.h>

#include "tests/support/test_env.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode_text.h"

namespace rlf {
namespace {

const char* kText =
    "Once upon a time, 🦙 llamas said “héllo” — 你好世界! こんにちは 👨‍👩‍👧 naïve café\n\tcode: x**2 == 4\n  end";

void check_stream(const Tokenizer& tok, const std::vector<int32_t>& ids, bool skip_special) {
  StreamDecoder stream(tok, skip_special);
  std::string all;
  for (int32_t id : ids) {
    std::string piece = stream.push(id);
    EXPECT_TRUE(unicode::is_valid_utf8(piece));
    EXPECT_EQ(piece.find("\xEF\xBF\xBD"), std::string::npos) << "emitted a replacement character";
    all += piece;
  }
  all += stream.finish();
  EXPECT_EQ(all, tok.decode(ids, skip_special)) << tok.name();
}

TEST(StreamDecoder, EqualsFullDecodeForEveryTokenizer) {
  for (std::string dir : {"gpt2", "llama2", "llama3.2", "qwen2.5", "phi-3-mini", "smollm2-135m-instruct"}) {
    auto tok = load_tokenizer(test::shared_path("tokenizers/hf/" + dir).string());
    auto ids = tok->encode(kText, true);
    check_stream(*tok, ids, true);
    check_stream(*tok, ids, false);
    EXPECT_EQ(tok->decode(tok->encode(kText, false)), kText) << dir;
  }
  auto tok = load_tokenizer(test::shared_path("models/stories260K/tok512.bin").string());
  check_stream(*tok, tok->encode(kText, true), true);
  EXPECT_EQ(tok->decode(tok->encode(kText, false)), kText);
}

TEST(StreamDecoder, HoldsBackPartialCharacters) {
  // gpt2 splits the llama emoji (4 bytes) over byte-level tokens.
  auto tok = load_tokenizer(test::shared_path("tokenizers/hf/gpt2").string());
  auto ids = tok->encode("🦙", false);
  ASSERT_GE(ids.size(), 2u);
  StreamDecoder stream(*tok);
  for (size_t i = 0; i + 1 < ids.size(); ++i) EXPECT_EQ(stream.push(ids[i]), "") << "token " << i;
  EXPECT_EQ(stream.push(ids.back()), "🦙");
  EXPECT_EQ(stream.finish(), "");

  // A dangling lead byte comes out of finish() as U+FFFD.
  auto llama = load_tokenizer(test::shared_path("tokenizers/hf/llama2").string());
  StreamDecoder s2(*llama);
  int32_t f0 = *llama->token_to_id("<0xF0>");
  EXPECT_EQ(s2.push(*llama->token_to_id("▁Hi")), "Hi");
  EXPECT_EQ(s2.push(f0), "");
  EXPECT_EQ(s2.finish(), "\xEF\xBF\xBD");
  EXPECT_EQ(llama->token_bytes(f0), "\xF0");
  EXPECT_EQ(llama->token_bytes(*llama->token_to_id("▁Hi")), " Hi");
}

TEST(Utf8, LossyRepairMatchesMaximalSubparts) {
  EXPECT_EQ(unicode::from_utf8_lossy("a\xF0\x9F\xA6"), "a\xEF\xBF\xBD");            // one truncated sequence
  EXPECT_EQ(unicode::from_utf8_lossy("\xC0\x80"), "\xEF\xBF\xBD\xEF\xBF\xBD");       // overlong: two
  EXPECT_EQ(unicode::from_utf8_lossy("\xED\xA0\x80"), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");  // surrogate
  EXPECT_EQ(unicode::incomplete_utf8_suffix("ab\xE4\xBD"), 2u);
  EXPECT_EQ(unicode::incomplete_utf8_suffix("ab\xE4\xBD\xA0"), 0u);
}

}  // namespace
}  // namespace rlf

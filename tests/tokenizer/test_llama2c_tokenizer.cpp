// The llama2.c tokenizer (tok512.bin of stories260K) against llama2.c's run.c:
// ids computed by a literal transcription of run.c's encode() (O(n^2)
// rescans), round trips, and clear errors for corrupt files.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <map>

#include "tests/support/test_env.h"
#include "tokenizer/llama2c_tokenizer.h"
#include "util/fs.h"
#include "util/json_util.h"

namespace rlf {
namespace {

std::string tok512_path() { return test::shared_path("models/stories260K/tok512.bin").string(); }

// run.c's encode(), transcribed literally (vocabulary read straight from the file).
struct RunC {
  std::vector<std::string> vocab;
  std::vector<float> scores;
  std::map<std::string, int> sorted;  // string -> lowest id (the file has no duplicates)

  explicit RunC(const std::string& path) {
    std::string d = read_file(path);
    size_t p = 4;
    while (p < d.size()) {
      float s;
      int32_t len;
      std::memcpy(&s, d.data() + p, 4);
      std::memcpy(&len, d.data() + p + 4, 4);
      p += 8;
      vocab.push_back(d.substr(p, len));
      scores.push_back(s);
      p += len;
    }
    for (size_t i = 0; i < vocab.size(); ++i) sorted.emplace(vocab[i], static_cast<int>(i));
  }
  int str_lookup(const std::string& s) const {
    auto it = sorted.find(s);
    return it == sorted.end() ? -1 : it->second;
  }
  std::vector<int32_t> encode(const std::string& text, bool bos, bool eos) const {
    std::vector<int32_t> tokens;
    if (bos) tokens.push_back(1);
    if (!text.empty()) tokens.push_back(str_lookup(" "));
    std::string buf;
    for (size_t i = 0; i < text.size(); ++i) {
      char c = text[i];
      if ((c & 0xC0) != 0x80) buf.clear();
      buf += c;
      if (i + 1 < text.size() && (text[i + 1] & 0xC0) == 0x80 && buf.size() < 4) continue;
      int id = str_lookup(buf);
      if (id != -1) {
        tokens.push_back(id);
      } else {
        for (char b : buf) tokens.push_back(static_cast<unsigned char>(b) + 3);
      }
      buf.clear();
    }
    while (true) {
      float best_score = -1e10;
      int best_id = -1, best_idx = -1;
      for (size_t i = 0; i + 1 < tokens.size(); ++i) {
        int id = str_lookup(vocab[tokens[i]] + vocab[tokens[i + 1]]);
        if (id != -1 && scores[id] > best_score) {
          best_score = scores[id];
          best_id = id;
          best_idx = static_cast<int>(i);
        }
      }
      if (best_idx == -1) break;
      tokens[best_idx] = best_id;
      tokens.erase(tokens.begin() + best_idx + 1);
    }
    if (eos) tokens.push_back(2);
    return tokens;
  }
};

TEST(Llama2cTokenizer, OnceUponATimeMatchesRunC) {
  Llama2cTokenizer tok(tok512_path());
  EXPECT_EQ(tok.vocab_size(), 512);
  // " Once" " upon" " a" " time" after BOS, as run.c prints for the prompt.
  EXPECT_EQ(tok.encode("Once upon a time", true), (std::vector<int32_t>{1, 403, 407, 261, 378}));  // BOS only, like run.c
  EXPECT_EQ(tok.encode("Once upon a time", false), (std::vector<int32_t>{403, 407, 261, 378}));
  EXPECT_EQ(tok.encode("", false), std::vector<int32_t>{});
  EXPECT_EQ(tok.decode(std::vector<int32_t>{1, 403, 407, 261, 378}), "\n<s>\nOnce upon a time");
  EXPECT_EQ(tok.decode(std::vector<int32_t>{1, 403, 407, 261, 378}, true), "Once upon a time");
}

TEST(Llama2cTokenizer, MatchesLiteralRunCAndRoundTripsOnStories) {
  Llama2cTokenizer tok(tok512_path());
  RunC ref(tok512_path());
  std::string readme = read_file(test::shared_path("README.md"));
  std::vector<std::string> texts = split_lines(readme);
  texts.push_back(readme.substr(0, 4000));
  texts.push_back("Hé, 🦙 naïve\n\tOK  two  spaces\x01 end ");
  texts.push_back(" leading space");
  size_t n = 0;
  for (const std::string& t : texts) {
    ASSERT_EQ(tok.encode(t, true), ref.encode(t, true, false)) << Json(t).dump();
    EXPECT_EQ(tok.decode(tok.encode(t, false)), t);
    EXPECT_EQ(tok.decode(tok.encode(t, true), true), t);
    ++n;
  }
  EXPECT_GT(n, 20u);
  // Byte fallback: the llama emoji is not a token of this 512-piece vocabulary.
  auto ids = tok.encode("\xF0\x9F\xA6\x99", false);
  EXPECT_EQ(ids, (std::vector<int32_t>{410, 0xF0 + 3, 0x9F + 3, 0xA6 + 3, 0x99 + 3}));
  EXPECT_EQ(tok.token_string(0xF0 + 3), "<0xF0>");
  EXPECT_EQ(tok.token_bytes(0xF0 + 3), "\xF0");
}

void write_bytes(const std::string& path, const std::string& data) { std::ofstream(path, std::ios::binary) << data; }

std::string error_of(const std::string& path) {
  try {
    Llama2cTokenizer tok(path);
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

TEST(Llama2cTokenizer, CorruptFilesGiveClearErrors) {
  std::string good = read_file(tok512_path());
  test::TempDir dir;
  std::string p = (dir / "tok512.bin").string();

  write_bytes(p, good.substr(0, good.size() - 3));
  EXPECT_NE(error_of(p).find("truncated at byte"), std::string::npos) << error_of(p);
  EXPECT_NE(error_of(p).find("inside token 511"), std::string::npos) << error_of(p);

  // Cut at a token boundary: only the name tells how many tokens to expect.
  size_t pos = 4;
  for (int i = 0; i < 500; ++i) {
    int32_t len;
    std::memcpy(&len, good.data() + pos + 4, 4);
    pos += 8 + len;
  }
  write_bytes(p, good.substr(0, pos));
  EXPECT_NE(error_of(p).find("holds 500 tokens but its name says 512; the file is truncated or corrupt"), std::string::npos)
      << error_of(p);

  write_bytes(p, std::string("\xff\xff\xff\xff", 4) + good.substr(4));
  EXPECT_NE(error_of(p).find("header max_token_length is -1, expected 1..4096"), std::string::npos) << error_of(p);

  std::string bad_len = good;
  int32_t huge = 1 << 30;
  std::memcpy(&bad_len[8], &huge, 4);
  write_bytes(p, bad_len);
  EXPECT_NE(error_of(p).find("token 0 has length 1073741824"), std::string::npos) << error_of(p);

  write_bytes(p, "ab");
  EXPECT_NE(error_of(p).find("too short for the header"), std::string::npos) << error_of(p);

  EXPECT_NE(error_of((dir / "missing.bin").string()).find("missing.bin"), std::string::npos);
}

}  // namespace
}  // namespace rlf

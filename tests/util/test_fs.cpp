#include <gtest/gtest.h>

#include "tests/support/test_env.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/json_util.h"
#include "util/mapped_file.h"

namespace rlf {
namespace {

TEST(Fs, AtomicWriteReplacesContentAndLeavesNoTemporaries) {
  test::TempDir dir;
  auto p = dir / "a.txt";
  write_file_atomic(p, "one");
  write_file_atomic(p, "two");
  EXPECT_EQ(read_file(p), "two");
  int n = 0;
  for (auto& e : fs::directory_iterator(dir.path())) (void)e, ++n;
  EXPECT_EQ(n, 1);
}

TEST(Fs, MissingFileErrorNamesThePath) {
  try {
    read_file("/nonexistent/rlf.txt");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/rlf.txt"), std::string::npos);
  }
}

TEST(Fs, ReadsGzip) {
  std::string s = read_file_maybe_gz(test::shared_path("data/humaneval/HumanEval.jsonl.gz"));
  EXPECT_EQ(split_lines(s).size(), 164u);
}

TEST(Json, MalformedJsonNamesSourceAndOffset) {
  try {
    parse_json("{\"a\": [1, 2", "config.json");
    FAIL();
  } catch (const Error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("config.json"), std::string::npos) << m;
    EXPECT_NE(m.find("malformed JSON"), std::string::npos) << m;
  }
}

TEST(Json, RequireNamesTheMissingField) {
  Json j = {{"a", 1}};
  EXPECT_EQ(json_require<int>(j, "a", "x.json"), 1);
  try {
    json_require<int>(j, "hidden_size", "x.json");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'hidden_size'"), std::string::npos);
  }
}

TEST(MappedFile, MapsWholeFile) {
  test::TempDir dir;
  write_file_atomic(dir / "b.bin", "hello");
  MappedFile m((dir / "b.bin").string());
  ASSERT_EQ(m.size(), 5u);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(m.data()), 5), "hello");
}

}  // namespace
}  // namespace rlf

// Fuzz test (fixed seed) of the JSONL dataset readers: mutated record files
// (byte flips, cuts, insertions, odd values, huge numbers, deep nesting,
// invalid UTF-8, NUL bytes) go through read_jsonl, PromptDataset::load and
// SftDataset::load under both on_bad_record policies. Every input must load
// (records with their invariants) or throw rlf::Error — never crash, hang or
// throw anything else. Run under ASan + UBSan by scripts/test.sh (label parser).
#include <gtest/gtest.h>

#include <random>

#include "data/jsonl_reader.h"
#include "data/prompt_dataset.h"
#include "data/sft_dataset.h"
#include "tests/support/test_env.h"
#include "util/fs.h"

namespace rlf {
namespace {

using Rng = std::mt19937_64;
size_t pick(Rng& rng, size_t n) { return n == 0 ? 0 : std::uniform_int_distribution<size_t>(0, n - 1)(rng); }

const char* kPieces[] = {"\"", "\\", "{", "}", "[", "]", ":", ",", "\n", "\r\n", "null", "1e400", "-0",
                         "18446744073709551616", "\"\\u0000\"", "\"\\ud800\"", "\xff\xfe", "\xc3",
                         "{\"question\": [1, 2]}", "{\"prompt\": {\"a\": 1}}", "[[[[[[[[[[[[[[[[[[[[", "\"answer\": 3.5"};

std::string seed_file() {
  return "{\"question\": \"What is 2 + 2?\", \"answer\": \"#### 4\", \"id\": \"a\"}\n"
         "{\"question\": \"Say hi\", \"answer\": \"hi\", \"prompt\": \"x\", \"response\": \"y\"}\n"
         "\n"
         "{\"prompt\": \"p\", \"response\": \"r\", \"reference\": 7}\n";
}

std::string mutate(std::string s, Rng& rng) {
  const int n = 1 + static_cast<int>(pick(rng, 4));
  for (int k = 0; k < n; ++k) {
    switch (pick(rng, 6)) {
      case 0:  // flip a byte
        if (!s.empty()) s[pick(rng, s.size())] = static_cast<char>(pick(rng, 256));
        break;
      case 1:  // cut
        s.resize(pick(rng, s.size() + 1));
        break;
      case 2: {  // insert a piece
        const std::string piece = kPieces[pick(rng, sizeof(kPieces) / sizeof(kPieces[0]))];
        s.insert(pick(rng, s.size() + 1), piece);
        break;
      }
      case 3:  // delete a span
        if (!s.empty()) {
          size_t at = pick(rng, s.size());
          s.erase(at, pick(rng, 8));
        }
        break;
      case 4:  // a NUL byte
        s.insert(pick(rng, s.size() + 1), 1, '\0');
        break;
      default:  // duplicate a line
        s += s.substr(0, s.find('\n') == std::string::npos ? s.size() : s.find('\n') + 1);
    }
  }
  return s;
}

template <typename Fn>
void expect_loads_or_rlf_error(Fn&& fn, const std::string& input) {
  try {
    fn();
  } catch (const Error&) {
  } catch (const std::exception& e) {
    ADD_FAILURE() << "non-rlf exception " << e.what() << " for input:\n" << input;
  }
}

TEST(JsonlFuzz, MutatedRecordFilesLoadOrFailCleanly) {
  test::TempDir dir;
  Rng rng(20261123);
  const std::string path = (dir / "data.jsonl").string();
  int loaded = 0;
  for (int i = 0; i < 1500; ++i) {
    const std::string text = mutate(seed_file(), rng);
    write_file_atomic(path, text);
    for (const char* policy : {"error", "skip"}) {
      expect_loads_or_rlf_error([&] {
        BadRecords bad(parse_on_bad_record(policy));
        for (const JsonlRecord& r : read_jsonl(path, bad)) {
          ASSERT_TRUE(r.value.is_object());
          ASSERT_GE(r.line, 1u);
        }
      }, text);
      expect_loads_or_rlf_error([&] {
        PromptDatasetOptions o;
        o.path = path;
        o.on_bad_record = policy;
        PromptDataset ds = PromptDataset::load(o);
        for (const PromptExample& e : ds.train()) ASSERT_FALSE(e.where.empty());
        ++loaded;
      }, text);
      expect_loads_or_rlf_error([&] {
        SftDatasetOptions o;
        o.path = path;
        o.on_bad_record = policy;
        SftDataset::load(o);
      }, text);
    }
  }
  EXPECT_GT(loaded, 100) << "the mutations should leave many files loadable";
}

}  // namespace
}  // namespace rlf

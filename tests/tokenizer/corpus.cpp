// Mixed text corpus for tokenizer tests (see corpus.h).
#include "tests/tokenizer/corpus.h"

#include <random>

#include "tests/support/test_env.h"
#include "util/fs.h"
#include "util/json_util.h"

namespace rlf::test {

namespace {

std::vector<Json> read_jsonl(const std::string& rel, size_t limit) {
  std::vector<Json> out;
  for (const std::string& line : split_lines(read_file_maybe_gz(shared_path(rel)))) {
    if (line.empty()) continue;
    if (out.size() >= limit) break;
    out.push_back(parse_json(line, rel));
  }
  return out;
}

const std::vector<std::string>& fragments() {
  static const std::vector<std::string> f = {
      "Hello", " world", "don't", " I'M", " you'RE", " they'll", "'s", "12345678901234", " 3.14159", "1,000,000",
      " $5.99", "€", "¥100", "naïve", "café", "e\u0301", "A\u030A", "\u212B", "ﬁ", "Ⅻ", "²", "½",
      "中文分词测试", "日本語のテキスト", "カタカナ", "한국어 문장", "مرحبا بالعالم", "नमस्ते दुनिया", "Привет, мир",
      "Καλημέρα", "ภาษาไทย", "שלום", "🦙", "👍🏽", "👨‍👩‍👧‍👦", "🇫🇷", "❤️", "🤖💬", "  ", "   ", "    ", "\t", "\t\t", "\n",
      "\n\n", "\r\n", " \n ", "\u00A0", "\u2003", "\u3000", "\u200B", "\uFEFF", "\u0085", "\u2028", " ", " ",
      "<s>", "</s>", "<unk>", "<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|begin_of_text|>", "<|eot_id|>",
      "<0x41>", "▁", "▁▁", "Ġ", "def f(x):\n    return x**2\n", "if (a && b) { c++; }", "#include <stdio.h>",
      "$\\frac{1}{2}$", "\\sqrt{x^2+y^2}", "...", "!!!", "???", "--", "—", "“quoted”", "‘single’", "(parens)",
      "[brackets]", "{braces}", "http://example.com/path?q=1", "user@example.com", "CamelCaseWord", "snake_case_name",
      "ALLCAPS", "x", "\x01\x02", "\x7f", "~", "`code`", "**bold**", "# Heading", "- item", "1. first",
  };
  return f;
}

}  // namespace

std::vector<std::string> build_corpus(const CorpusOptions& o) {
  std::vector<std::string> texts;
  for (const Json& j : read_jsonl("data/gsm8k/train.jsonl", o.n_gsm8k))
    texts.push_back(j.value("question", "") + "\n" + j.value("answer", ""));
  for (const Json& j : read_jsonl("data/math500/test.jsonl", o.n_math))
    texts.push_back(j.value("problem", "") + "\n\n" + j.value("solution", ""));
  for (const Json& j : read_jsonl("data/humaneval/HumanEval.jsonl.gz", o.n_humaneval))
    texts.push_back(j.value("prompt", "") + j.value("canonical_solution", "") + "\n\n" + j.value("test", ""));
  for (const Json& j : read_jsonl("data/hh-rlhf/harmless-base-test.jsonl.gz", o.n_dialogue))
    texts.push_back(j.value("chosen", ""));
  std::mt19937 rng(o.seed);
  const auto& f = fragments();
  std::uniform_int_distribution<size_t> pick(0, f.size() - 1), count(1, 12), spaces(0, 3);
  for (size_t i = 0; i < o.n_generated; ++i) {
    std::string s;
    size_t n = count(rng);
    for (size_t k = 0; k < n; ++k) {
      s += f[pick(rng)];
      s += std::string(spaces(rng) == 0 ? 1 : 0, ' ');
    }
    texts.push_back(std::move(s));
  }
  return texts;
}

}  // namespace rlf::test

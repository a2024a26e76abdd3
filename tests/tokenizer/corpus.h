// A mixed text corpus for tokenizer comparisons, built from shared/ data:
// GSM8K, MATH-500, HumanEval code, HH-RLHF dialogue, and generated strings
// (multilingual, emoji, combining marks, odd whitespace, special-token
// look-alikes) from a fixed seed.
#pragma once

#include <string>
#include <vector>

namespace rlf::test {

struct CorpusOptions {
  size_t n_gsm8k = 1000;      // GSM8K train question + answer pairs
  size_t n_math = 300;        // MATH-500 problem + solution
  size_t n_humaneval = 164;   // HumanEval prompt + solution + test
  size_t n_dialogue = 400;    // HH-RLHF "chosen" dialogues
  size_t n_generated = 2000;  // random mixes of tricky fragments
  unsigned seed = 1234;       // for the generated strings
};

std::vector<std::string> build_corpus(const CorpusOptions& options = {});

}  // namespace rlf::test

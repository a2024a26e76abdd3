// Encode throughput measurement behind `rlf bench tokenize`: encodes a text
// repeatedly on one thread for a minimum time and reports bytes and tokens
// per second. The word cache stays warm across repetitions, as in a
// long-running process.
#pragma once

#include <string>
#include <string_view>

#include "tokenizer/tokenizer.h"

namespace rlf {

struct TokenizeBenchOptions {
  double min_seconds = 2.0;  // keep encoding until this much wall time has passed (s)
  size_t min_iterations = 1;  // and at least this many passes over the text
};

struct TokenizeBenchResult {
  std::string tokenizer;  // Tokenizer::name()
  size_t bytes = 0;       // size of the text (one pass)
  size_t tokens = 0;      // ids produced by one pass
  size_t iterations = 0;  // passes timed
  double seconds = 0;     // total timed wall time
  double first_pass_seconds = 0;  // the first (cold-cache) pass alone
  double mb_per_s = 0;    // bytes * iterations / seconds / 1e6
  double tokens_per_s = 0;
};

TokenizeBenchResult bench_encode(const Tokenizer& tok, std::string_view text, const TokenizeBenchOptions& options = {});

// One JSON object with every field of `r`.
std::string to_json(const TokenizeBenchResult& r);

// A built-in English sample (a few KB) for when no text file is given.
std::string_view builtin_bench_text();

}  // namespace rlf

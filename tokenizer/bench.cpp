// Encode throughput measurement (see bench.h).
#include "tokenizer/bench.h"

#include <chrono>

#include "util/error.h"
#include "util/json_util.h"

namespace rlf {

TokenizeBenchResult bench_encode(const Tokenizer& tok, std::string_view text, const TokenizeBenchOptions& options) {
  check(options.min_seconds >= 0, "bench tokenize: min_seconds must be >= 0, got ", options.min_seconds);
  check(!text.empty(), "bench tokenize: the text is empty");
  using Clock = std::chrono::steady_clock;
  TokenizeBenchResult r;
  r.tokenizer = tok.name();
  r.bytes = text.size();
  auto start = Clock::now();
  while (true) {
    auto pass_start = Clock::now();
    size_t n = tok.encode(text, false).size();
    double pass = std::chrono::duration<double>(Clock::now() - pass_start).count();
    if (r.iterations == 0) {
      r.tokens = n;
      r.first_pass_seconds = pass;
    }
    ++r.iterations;
    r.seconds = std::chrono::duration<double>(Clock::now() - start).count();
    if (r.seconds >= options.min_seconds && r.iterations >= options.min_iterations) break;
  }
  r.mb_per_s = static_cast<double>(r.bytes) * r.iterations / r.seconds / 1e6;
  r.tokens_per_s = static_cast<double>(r.tokens) * r.iterations / r.seconds;
  return r;
}

std::string to_json(const TokenizeBenchResult& r) {
  Json j = {{"tokenizer", r.tokenizer},   {"bytes", r.bytes},       {"tokens", r.tokens},
            {"iterations", r.iterations}, {"seconds", r.seconds},   {"first_pass_seconds", r.first_pass_seconds},
            {"mb_per_s", r.mb_per_s},     {"tokens_per_s", r.tokens_per_s}};
  return json_line(j);
}

std::string_view builtin_bench_text() {
  static const std::string text = [] {
    const char* paragraph =
        "Natalia sold clips to 48 of her friends in April, and then she sold half as many clips in May. "
        "How many clips did Natalia sell altogether in April and May? Natalia sold 48/2 = 24 clips in May. "
        "Natalia sold 48+24 = 72 clips altogether in April and May. Weng earns $12 an hour for babysitting. "
        "Yesterday, she just did 50 minutes of babysitting. How much did she earn? Weng earns 12/60 = $0.2 per "
        "minute. Working 50 minutes, she earned 0.2 x 50 = $10. Betty is saving money for a new wallet which "
        "costs $100. Betty has only half of the money she needs. Her parents decided to give her $15 for that "
        "purpose, and her grandparents twice as much as her parents. How much more money does Betty need to buy "
        "the wallet?\n";
    std::string s;
    for (int i = 0; i < 64; ++i) s += paragraph;
    return s;
  }();
  return text;
}

}  // namespace rlf

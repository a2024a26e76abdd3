// `rlf bench tokenize`: single-thread encode throughput of a tokenizer on a
// text file (see tokenizer/bench.h for the measurement).
#include <iostream>

#include "apps/cli/cli.h"
#include "tokenizer/bench.h"
#include "util/error.h"
#include "util/fs.h"

namespace rlf::cli {

namespace {

int run_bench_tokenize(const Args& args) {
  check(args.given("tokenizer"), "bench tokenize: --tokenizer PATH is required");
  auto tok = load_tokenizer(args.str("tokenizer"));
  std::string text = args.given("file") ? read_file_maybe_gz(args.str("file")) : std::string(builtin_bench_text());
  TokenizeBenchOptions options;
  options.min_seconds = args.number("seconds");
  TokenizeBenchResult r = bench_encode(*tok, text, options);
  if (args.flag("json")) {
    std::cout << to_json(r) << "\n";
  } else {
    std::cout << r.tokenizer << ": " << r.bytes << " bytes -> " << r.tokens << " tokens; " << r.mb_per_s << " MB/s, "
              << r.tokens_per_s << " tokens/s (" << r.iterations << " passes in " << r.seconds
              << " s; first pass " << r.first_pass_seconds << " s)\n";
  }
  return 0;
}

}  // namespace

CommandSpec make_bench_tokenize_command() {
  CommandSpec c;
  c.name = "bench tokenize";
  c.summary = "measure single-thread encode throughput of a tokenizer";
  c.options = {
      {"tokenizer", OptKind::String, "", "tokenizer.json, a directory holding it, or a llama2.c tok*.bin", "PATH"},
      {"file", OptKind::String, "", "text file to encode (.gz allowed); default: a built-in English sample", "TEXTFILE"},
      {"seconds", OptKind::Float, "2", "minimum timed duration in seconds", "S", 0.001, 3600},
      {"json", OptKind::Flag, "false", "print one JSON object (mb_per_s, bytes, tokens, tokenizer, ...)", ""},
  };
  c.run = run_bench_tokenize;
  return c;
}

}  // namespace rlf::cli

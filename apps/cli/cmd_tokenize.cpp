// `rlf tokenize`: encode a text (or decode ids) with any tokenizer rlf loads,
// printing ids and token strings. The work is in rlf_tokenizer.
#include <iostream>
#include <sstream>

#include "apps/cli/cli.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"
#include "util/json_util.h"

namespace rlf::cli {

namespace {

std::vector<int32_t> parse_ids(const std::string& text) {
  std::vector<int32_t> ids;
  std::string s = text;
  for (char& c : s)
    if (c == ',' || c == '[' || c == ']') c = ' ';
  std::istringstream in(s);
  std::string word;
  while (in >> word) {
    try {
      size_t used = 0;
      long long v = std::stoll(word, &used);
      check(used == word.size() && v >= 0 && v <= INT32_MAX, "");
      ids.push_back(static_cast<int32_t>(v));
    } catch (const std::exception&) {
      fail("--decode: '", word, "' is not a token id (expected non-negative integers separated by spaces or commas)");
    }
  }
  return ids;
}

int run_tokenize(const Args& args) {
  check(args.given("tokenizer"), "tokenize: --tokenizer PATH is required (tokenizer.json, its directory, or a tok*.bin)");
  check(args.given("text") != args.given("decode"), "tokenize: give exactly one of --text TEXT or --decode IDS");
  auto tok = load_tokenizer(args.str("tokenizer"));
  bool json = args.flag("json");
  if (args.given("decode")) {
    std::vector<int32_t> ids = parse_ids(args.str("decode"));
    std::string text = tok->decode(ids, args.flag("skip-special"));
    if (json) std::cout << json_line(Json{{"text", text}}) << "\n";
    else std::cout << text << "\n";
    return 0;
  }
  std::vector<int32_t> ids = tok->encode(args.str("text"), args.flag("add-special"));
  if (json) {
    Json tokens = Json::array();
    for (int32_t id : ids) tokens.push_back(tok->token_string(id));
    std::cout << json_line(Json{{"ids", ids}, {"tokens", tokens}}) << "\n";
    return 0;
  }
  std::cout << ids.size() << " tokens\n";
  for (size_t i = 0; i < ids.size(); ++i) {
    std::string shown = json_line(Json(tok->token_string(ids[i])));
    std::cout << i << "\t" << ids[i] << "\t" << shown << (tok->is_special(ids[i]) ? "\t(special)" : "") << "\n";
  }
  return 0;
}

}  // namespace

CommandSpec make_tokenize_command() {
  CommandSpec c;
  c.name = "tokenize";
  c.summary = "encode text (or decode ids) with a tokenizer and show the tokens";
  c.options = {
      {"tokenizer", OptKind::String, "", "tokenizer.json, a directory holding it, or a llama2.c tok*.bin", "PATH"},
      {"text", OptKind::String, "", "text to encode", "TEXT"},
      {"add-special", OptKind::Flag, "false", "add BOS/EOS as the tokenizer's post-processor does", ""},
      {"decode", OptKind::String, "", "decode these ids instead (e.g. \"1 15043 3186\" or \"[1,2]\")", "IDS"},
      {"skip-special", OptKind::Flag, "false", "with --decode: drop special tokens", ""},
      {"json", OptKind::Flag, "false", "print one JSON object: {\"ids\": [...], \"tokens\": [...]} (or {\"text\": ...})", ""},
  };
  c.run = run_tokenize;
  return c;
}

}  // namespace rlf::cli

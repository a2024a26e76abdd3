// Every `rlf` command line quoted in README.md, docs/*.md, examples/README.md
// and bench/README.md parses: the command exists, its options are declared
// and their numeric values in range, and its --set keys are config keys whose
// values load (the rules, placeholders included: tests/apps/doc_commands.h).
// Fast tier: nothing runs, nothing is loaded but TOML configs.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "tests/apps/doc_commands.h"
#include "tests/support/test_env.h"

namespace rlf::test {
namespace {

std::string read_text(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<std::string> documents() {
  std::vector<std::string> out = {"README.md", "examples/README.md", "bench/README.md"};
  for (const auto& e : std::filesystem::directory_iterator(source_path("docs")))
    if (e.path().extension() == ".md") out.push_back("docs/" + e.path().filename().string());
  return out;
}

std::vector<std::vector<std::string>> words_of(const std::string& markdown) {
  std::vector<std::vector<std::string>> out;
  for (const auto& c : extract_commands(markdown, "t.md")) out.push_back(c.words);
  return out;
}

using Words = std::vector<std::vector<std::string>>;

TEST(DocCommands, CodeBlocksYieldEachRlfCommandOnce) {
  const std::string md =
      "```sh\n"
      "rlf train a.toml \\\n"
      "  --set optim.lr=1e-5   # a comment --bogus\n"
      "for s in 0 1 2; do rlf train b.toml --set run.seed=$s; done\n"
      "cp x y; build/apps/cli/rlf eval --config 'c d.toml' --json > out.json\n"
      "python3 bench/async_bench.py --rlf build/apps/cli/rlf --config x.toml\n"
      "torchrun --nproc_per_node 2 --no_python build/apps/cli/rlf train C.toml\n"
      "  rlf demo: GRPO on two-digit addition\n"
      "```\n"
      "```toml\nrlf train = 1\n```\n"
      "```text\nbench/   `rlf bench` implementations\n```\n";
  EXPECT_EQ(words_of(md), (Words{{"train", "a.toml", "--set", "optim.lr=1e-5"},
                                 {"train", "b.toml", "--set", "run.seed=$s"},
                                 {"eval", "--config", "c d.toml", "--json"},
                                 {"train", "C.toml"}}));
  const auto commands = extract_commands(md, "t.md");
  ASSERT_EQ(commands.size(), 4u);
  EXPECT_EQ(commands[0].line, 2);
  EXPECT_EQ(commands[3].line, 7);
}

TEST(DocCommands, InlineSpansMayCrossLinesButNotPlaceholderCommands) {
  const std::string md =
      "Run `rlf eval rm\n--model DIR --json` then `rlf COMMAND --help` or `rlf`.\n"
      "\n"
      "| a | `rlf generate --model m` |\n"
      "Text `` `rlf` `` and `ls` and `build/apps/cli/rlf info m` and `cp a b && rlf demo --json`.\n"
      "An error `x; rlf supports only BPE` is not a command.\n";
  EXPECT_EQ(words_of(md), (Words{{"eval", "rm", "--model", "DIR", "--json"},
                                 {"generate", "--model", "m"},
                                 {"info", "m"},
                                 {"demo", "--json"}}));
  EXPECT_EQ(extract_commands(md, "t.md")[1].line, 4);
}

std::optional<std::string> check(const std::string& line) {
  const auto commands = extract_commands("```\n" + line + "\n```\n", "t.md");
  if (commands.size() != 1) return "extracted " + std::to_string(commands.size()) + " commands";
  return check_command(commands[0], source_path("").string());
}

TEST(DocCommands, UsageLinesWithPlaceholdersParse) {
  for (const char* ok : {"rlf generate --model PATH [--tokenizer PATH] --prompt TEXT --max-new-tokens N [--dtype auto|fp32|bf16]",
                         "rlf merge --model A --model B [--weight 0.5 --weight 0.5] [--base DIR] --out DIR",
                         "rlf train CONFIG.toml [--set KEY=VALUE] [--resume] [--json]",
                         "rlf train examples/feedback/addition/grpo.toml --set run.seed=$s --set optim.lr=1e-5 ...",
                         "rlf compare examples/feedback/addition/{grpo,refine}.toml --seeds 3 --set run.rollout_token_budget=300000",
                         "rlf demo --seed N --set sft.data.wrong_fraction=0.7 --set sft.data.wrong_style=drop_carry",
                         "rlf bench train|generate --json", "rlf bench ...", "rlf export --gguf", "rlf generate --seed"})
    EXPECT_EQ(check(ok), std::nullopt) << ok;
}

TEST(DocCommands, WhatWouldNotRunIsReported) {
  const std::map<std::string, std::string> bad = {
      {"rlf trian x.toml", "unknown command 'trian'"},
      {"rlf bench tokenise --json", "unknown command 'rlf bench tokenise'"},
      {"rlf bench --threads 2", "'rlf bench' needs a subcommand"},
      {"rlf train x.toml --sett a=b", "unknown option --sett"},
      {"rlf generate --model m --max-new-tokens many", "--max-new-tokens expects an integer"},
      {"rlf generate --model m --max-new-tokens 0", "must be in"},
      {"rlf train x.toml --set optim.lrr=1e-5", "'optim.lrr' is not a config key"},
      {"rlf eval --config c.toml --set run.steps=3", "'run.steps' is not a config key"},
      {"rlf train examples/calculator/train.toml --set rollout.group_size=0", "rollout.group_size"},
      {"rlf compare examples/feedback/addition/{grpo,refine}.toml --set data.nope=1", "nope"},
      {"rlf demo --set sft.data.wrong_style=nonsense", "nonsense"},
  };
  for (const auto& [line, needle] : bad) {
    const auto why = check(line);
    ASSERT_TRUE(why.has_value()) << line;
    EXPECT_NE(why->find(needle), std::string::npos) << line << "\n  -> " << *why;
  }
}

TEST(DocCommands, EveryQuotedCommandParses) {
  std::map<std::string, size_t> found;
  for (const std::string& doc : documents()) {
    const auto commands = extract_commands(read_text(source_path(doc)), doc);
    found[doc] = commands.size();
    for (const auto& c : commands)
      if (auto why = check_command(c, source_path("").string()))
        ADD_FAILURE() << c.file << ":" << c.line << ": `" << c.text << "`\n  " << *why;
  }
  // The extraction itself must not rot into finding nothing.
  EXPECT_GE(found["README.md"], 10u);
  EXPECT_GE(found["docs/cli.md"], 25u);
  EXPECT_GE(found["examples/README.md"], 10u);
  size_t total = 0;
  for (const auto& [doc, n] : found) total += n;
  EXPECT_GE(total, 200u);
}

}  // namespace
}  // namespace rlf::test

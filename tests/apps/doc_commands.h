// The `rlf` command lines that the documents quote, found and checked as a
// user would type them, so that documented commands cannot rot
// (tests/apps/test_doc_commands.cpp runs it over README.md, docs/*.md,
// examples/README.md and bench/README.md).
//
// What counts as a quoted command line (extract_commands):
//   - in a fenced code block (``` or ~~~; every info string but data and
//     program languages: toml, json, jsonl, python, py, cpp, c, yaml): each
//     shell line, lines ending in `\` joined to the next, `#` starting a
//     comment at a word's start; a line is split into simple commands at
//     `;`, `&&`, `||`, ` | `, `&`, `(`, `)`, `$(` and backquotes, and a simple
//     command is an rlf command when its first word — after `do`, `then`,
//     `else`, `time`, a `$` prompt and VAR=value assignments — is `rlf` or a
//     path ending in `/rlf` (build/apps/cli/rlf), or when it is torchrun's and
//     the word after `--no_python` is;
//   - the same in an inline code span (`...`, across the line breaks of its
//     paragraph or table row) whose first word runs rlf or is one of cp, cd,
//     mkdir, python3, bash, for, time or an assignment: `rlf train x.toml`,
//     `cp a b; rlf compare b` (not an error message's `x; rlf supports ...`).
//   The word after `rlf` must be a lowercase command word: `rlf demo:` (a
//   run's printed output) and `rlf COMMAND --help` (a placeholder) are not
//   commands. Blocks marked `text` (a folder layout, printed output) are not
//   read.
//
// How one is checked (check_command), at `rlf COMMAND --help` level:
//   - the command exists and every --option is one it declares, every numeric
//     value parses and lies in the option's range: the binary's own parser
//     (cli::parse_command_line) with --help appended, so positional
//     arguments are not counted and nothing runs;
//   - every --set KEY=VALUE names a config key: an entry of the training
//     config's schema (rlf train, compare, reflexion, demo) or of the eval
//     config's (rlf eval), or lies inside an entry of type "any" (data.*,
//     reward.*, sft.data.*, ...);
//   - where the whole override can be applied — the config file named is in
//     the repository (or the command is `rlf demo`, whose config is built in)
//     and no value is a placeholder — the config is loaded with the overrides
//     as the command would load it (load_train_config, read_eval_config, the
//     demo's config through train_config_from_json), which also checks the
//     values and the keys inside "any" entries.
// Placeholders, as usage lines write them: `[` and `]` around optional parts
// are dropped, a word `...` is dropped, `a|b` means the first alternative
// (`rlf bench train|generate` is `rlf bench train`), and `rlf bench` alone
// names the group of `rlf bench ...` commands; a
// value containing a capital letter, `$` or `...` (PATH, N, KEY=VALUE,
// CONFIG.toml, $s) is a placeholder: a numeric option's placeholder value is
// replaced by the option's default, an override with a placeholder key is
// not checked, and one with a placeholder value is checked by its key only;
// an option quoted last without its value (`rlf generate --seed`, naming the
// option in prose) is checked as if its default followed.
// `{a,b}` in a config path expands as the shell does; a path with `*` is
// checked by its overrides' keys only.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace rlf::test {

struct QuotedCommand {
  std::string file;                // as given to extract_commands
  int line = 0;                    // 1-based line where the command starts
  std::string text;                // the command as quoted (one line)
  std::vector<std::string> words;  // the shell words after `rlf`, placeholders untouched
};

// Every rlf command line quoted in `markdown` (rules above).
std::vector<QuotedCommand> extract_commands(const std::string& markdown, const std::string& file);

// Why `command` would not parse ("unknown option --sett ..."), or nothing.
// Relative config paths are looked up under `source_dir`.
std::optional<std::string> check_command(const QuotedCommand& command, const std::string& source_dir);

}  // namespace rlf::test

// The `rlf` command line: a declarative table of commands, each with its
// options (name, kind, default, help). The parser, the help text and the
// table's self-check (no duplicate names, every default parses) all read the
// same table; a command's handler reads typed values from Args.
//
// Commands with two words ("bench generate", "verify math") are matched by the
// longest prefix of the command line.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace rlf::cli {

enum class OptKind {
  Flag,    // --name (no value); default "false"
  String,  // --name VALUE
  Int,     // --name 42
  Float,   // --name 0.7
  List,    // --name A --name B (repeatable); default "" = empty
};

struct OptionSpec {
  std::string name;           // long name without dashes, e.g. "max-new-tokens"
  OptKind kind = OptKind::String;
  std::string default_value;  // as text; "" means "not set" for String/List
  std::string help;           // one line: meaning, unit, accepted values
  std::string metavar;        // shown in help, e.g. "N", "PATH"
  // Int/Float: the accepted range, checked when the command line is parsed
  // ("--n 1000000000: must be in [1, 65536]"). Every numeric option has one.
  double min = -kUnbounded;
  double max = kUnbounded;
  static constexpr double kUnbounded = 1e300;
};

class Args {
 public:
  // True when --name was given on the command line (not just defaulted).
  bool given(const std::string& name) const;
  bool flag(const std::string& name) const;
  const std::string& str(const std::string& name) const;
  int64_t integer(const std::string& name) const;
  double number(const std::string& name) const;
  std::vector<std::string> list(const std::string& name) const;
  const std::vector<std::string>& positional() const { return positional_; }

  // Used by the parser.
  void set(const std::string& name, const std::string& value, bool given);
  void append(const std::string& name, const std::string& value);
  void add_positional(const std::string& value) { positional_.push_back(value); }

 private:
  const std::string& raw(const std::string& name) const;
  std::map<std::string, std::string> values_;
  std::map<std::string, std::vector<std::string>> lists_;
  std::map<std::string, bool> given_;
  std::vector<std::string> positional_;
};

struct CommandSpec {
  std::string name;         // "generate", "bench generate"
  std::string summary;      // one line for `rlf --help`
  std::string usage;        // positional arguments, e.g. "FILE" ("" if none)
  size_t n_positional_min = 0;
  size_t n_positional_max = 0;
  std::vector<OptionSpec> options;
  std::function<int(const Args&)> run;  // returns the exit code
};

// Every command of the binary, in the order `rlf --help` lists them.
const std::vector<CommandSpec>& command_table();

// Options every command accepts (threads, device, ...), merged into each.
const std::vector<OptionSpec>& common_options();

// Parses argv (without the program name) against the table. Returns the
// command and fills `args`; throws rlf::Error with a usage hint on bad input.
const CommandSpec& parse_command_line(const std::vector<std::string>& argv, Args& args);

// Help text for one command / for the whole binary.
std::string command_help(const CommandSpec& cmd);
std::string global_help();
// The commands named "WORD SUB" (e.g. "bench generate" for "bench"), in
// table order; empty when WORD groups none.
std::vector<const CommandSpec*> subcommands_of(const std::string& word);
// `rlf WORD --help` for a word that only groups subcommands ("bench",
// "verify", "chat-template"): their names and summaries.
std::string group_help(const std::string& word);

// Checks the table: unique command and option names, every default parses as
// its kind. Throws rlf::Error naming the offending entry.
void validate_command_table();

}  // namespace rlf::cli

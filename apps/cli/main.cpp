// The program's edge: parse the command line against the table, run the
// command, and turn any error into one line on stderr and exit code 1. Large
// freed blocks stay in the process for reuse (model/huge_pages.h).
#include <exception>
#include <iostream>
#include <string>
#include <vector>

#include "apps/cli/cli.h"
#include "model/huge_pages.h"

int main(int argc, char** argv) {
  rlf::reuse_large_allocations();
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    std::cout << rlf::cli::global_help();
    return args.empty() ? 2 : 0;
  }
  // A word that only groups subcommands (bench, verify, chat-template): list them.
  const bool group_only = args.size() <= 2 && !rlf::cli::subcommands_of(args[0]).empty() &&
                          (args.size() == 1 || args[1] == "--help" || args[1] == "-h");
  bool is_command = false;
  for (const auto& c : rlf::cli::command_table()) is_command |= c.name == args[0];
  if (group_only && !is_command) {
    std::cout << rlf::cli::group_help(args[0]);
    return args.size() == 1 ? 2 : 0;
  }
  try {
    rlf::cli::Args parsed;
    const rlf::cli::CommandSpec& cmd = rlf::cli::parse_command_line(args, parsed);
    if (parsed.flag("help")) {
      std::cout << rlf::cli::command_help(cmd);
      return 0;
    }
    return cmd.run(parsed);
  } catch (const std::exception& e) {
    std::cerr << "rlf: error: " << e.what() << "\n";
    return 1;
  }
}

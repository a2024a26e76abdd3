// rlf config train: prints the reference of every `rlf train` config key
// (key, type, default, unit, meaning) as Markdown, from the same schema the
// loader validates with. docs/config.md holds its output (a test keeps them equal).
#include <iostream>

#include "apps/cli/commands.h"
#include "train/config_schema.h"
#include "train/train_config.h"
#include "util/error.h"

namespace rlf::cli {

CommandSpec make_config_command() {
  CommandSpec c;
  c.name = "config";
  c.summary = "print the reference table of a config file's keys (Markdown)";
  c.usage = "train";
  c.n_positional_min = c.n_positional_max = 1;
  c.run = [](const Args& a) {
    const std::string& which = a.positional().at(0);
    check(which == "train", "rlf config: unknown config kind '", which, "' (known: train)");
    std::cout << schema_markdown(train_config_schema());
    return 0;
  };
  return c;
}

}  // namespace rlf::cli

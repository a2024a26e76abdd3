// rlf config train [--toml]: prints the reference of every `rlf train` config
// key (key, type, default, unit, meaning) as Markdown, or a commented TOML
// template, from the same schema the loader validates with. docs/config.md
// holds the Markdown (a test keeps them equal).
#include <iostream>

#include "apps/cli/commands.h"
#include "config/config_schema.h"
#include "train/train_config.h"
#include "util/error.h"

namespace rlf::cli {

CommandSpec make_config_command() {
  CommandSpec c;
  c.name = "config";
  c.summary = "print the reference of a config file's keys (Markdown table, or --toml template)";
  c.usage = "train";
  c.n_positional_min = c.n_positional_max = 1;
  c.options = {
      {"toml", OptKind::Flag, "false", "print a TOML template instead: every key with its default and a comment", ""},
  };
  c.run = [](const Args& a) {
    const std::string& which = a.positional().at(0);
    check(which == "train", "rlf config: unknown config kind '", which, "' (known: train)");
    std::cout << (a.flag("toml") ? schema_toml_template(train_config_schema()) : schema_markdown(train_config_schema()));
    return 0;
  };
  return c;
}

}  // namespace rlf::cli

// rlf config train|learn [--toml]: prints the reference of every `rlf train`
// (or `rlf serve --learn`) config key (key, type, default, unit, meaning) as Markdown, or a commented TOML
// template, from the same schema the loader validates with. docs/config.md
// and docs/serve.md hold the Markdown (tests keep them equal).
#include <iostream>

#include "apps/cli/commands.h"
#include "config/config_schema.h"
#include "train/serve_learner.h"
#include "train/train_config.h"
#include "util/error.h"

namespace rlf::cli {

CommandSpec make_config_command() {
  CommandSpec c;
  c.name = "config";
  c.summary = "print the reference of a config file's keys (Markdown table, or --toml template)";
  c.usage = "train|learn";
  c.n_positional_min = c.n_positional_max = 1;
  c.options = {
      {"toml", OptKind::Flag, "false", "print a TOML template instead: every key with its default and a comment", ""},
  };
  c.run = [](const Args& a) {
    const std::string& which = a.positional().at(0);
    check(which == "train" || which == "learn", "rlf config: unknown config kind '", which, "' (known: train, learn)");
    const ConfigSchema& schema = which == "train" ? train_config_schema() : learn_config_schema();  // learn: rlf serve --learn
    std::cout << (a.flag("toml") ? schema_toml_template(schema) : schema_markdown(schema));
    return 0;
  };
  return c;
}

}  // namespace rlf::cli

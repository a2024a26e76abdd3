// The option schema: defaults filled, unknown keys / wrong types / missing
// required keys rejected with exact messages, the schema checked itself, and
// the Markdown documentation table.
#include <gtest/gtest.h>

#include "config/config_schema.h"
#include "config/toml_config.h"
#include "tests/support/test_env.h"

namespace rlf {
namespace {

using test::error_of;

const ConfigSchema& schema() {
  static const ConfigSchema s = {
      {"model.path", OptionType::String, nullptr, "", "HF directory or llama2.c .bin"},
      {"model.dtype", OptionType::String, "bf16", "", "parameter dtype", {"fp32", "bf16"}},
      {"optimizer.lr", OptionType::Float, 1e-6, "", "peak learning rate"},
      {"optimizer.betas", OptionType::FloatList, Json::array({0.9, 0.999}), "", "Adam β1, β2"},
      {"optimizer.clip", OptionType::Bool, true, "", "clip gradients | by norm"},
      {"train.steps", OptionType::Int, 100, "steps", "optimiser steps"},
      {"train.tags", OptionType::StringList, Json::array(), "", "labels for the run"},
      {"rewards", OptionType::Any, Json::array(), "", "reward functions (validated by the trainer)"},
  };
  return s;
}

TEST(ConfigSchema, FillsDefaultsAndConvertsNumbers) {
  Json cfg = parse_toml("[model]\npath = \"/m\"\n[optimizer]\nlr = 1\n[[rewards]]\nkind = \"math\"\n", "run.toml");
  Json out = validate_config(cfg, schema(), "run.toml");
  EXPECT_EQ(out["model"]["path"], "/m");
  EXPECT_EQ(out["model"]["dtype"], "bf16");
  EXPECT_TRUE(out["optimizer"]["lr"].is_number_float());  // the integer 1 became 1.0
  EXPECT_EQ(out["optimizer"]["lr"].get<double>(), 1.0);
  EXPECT_EQ(out["optimizer"]["clip"], true);
  EXPECT_EQ(out["train"]["steps"], 100);
  EXPECT_EQ(out["train"]["tags"], Json::array());
  EXPECT_EQ(out["rewards"][0]["kind"], "math");  // Any: passed through
}

TEST(ConfigSchema, ErrorsNameTheKeyAndTheFix) {
  auto err = [](const std::string& toml) {
    return error_of([&] { validate_config(parse_toml(toml, "run.toml"), schema(), "run.toml"); });
  };
  const std::string base = "[model]\npath = \"/m\"\n";
  EXPECT_EQ(err(base + "[optimizer]\nlrr = 1e-6\n"),
            "run.toml: unknown key 'optimizer.lrr' (did you mean 'optimizer.lr'?; valid keys in 'optimizer': betas, "
            "clip, lr)");
  EXPECT_EQ(err("seed = 1\n" + base),
            "run.toml: unknown key 'seed' (valid keys in the top level: model, optimizer, rewards, train)");
  EXPECT_EQ(err(base + "[optimizer]\nlr = \"abc\"\n"),
            "run.toml: key 'optimizer.lr' must be a float, got string \"abc\" (e.g. optimizer.lr = 1e-06)");
  EXPECT_EQ(err(base + "[train]\nsteps = 2.5\n"),
            "run.toml: key 'train.steps' must be an int, got float 2.5 (e.g. train.steps = 100)");
  EXPECT_EQ(err(base + "[train]\ntags = [\"a\", 1]\n"),
            "run.toml: key 'train.tags' must be a string list, got array [\"a\",1] (e.g. train.tags = [])");
  EXPECT_EQ(err(base + "[optimizer]\nclip = \"yes\"\n"),
            "run.toml: key 'optimizer.clip' must be a bool, got string \"yes\" (e.g. optimizer.clip = true)");
  EXPECT_EQ(err("[model]\npath = \"/m\"\ndtype = \"fp16\"\n"),
            "run.toml: key 'model.dtype' must be one of fp32, bf16, got \"fp16\"");
  EXPECT_EQ(err("model = \"/m\"\n"),
            "run.toml: key 'model' must be a table (of dtype, path), got string \"/m\"");
  EXPECT_EQ(err("[optimizer]\nlr = 0.1\n"), "run.toml: missing required key 'model.path' (HF directory or llama2.c .bin)");
}

// NaN is never a setting; non-finite values are spelled as TOML spells them, never JSON's null.
TEST(ConfigSchema, NanIsRefusedAndNonFiniteValuesAreNamedAsWritten) {
  auto err = [](const std::string& toml) {
    return error_of([&] { validate_config(parse_toml(toml, "run.toml"), schema(), "run.toml"); });
  };
  const std::string base = "[model]\npath = \"/m\"\n";
  EXPECT_EQ(err(base + "[optimizer]\nlr = nan\n"),
            "run.toml: key 'optimizer.lr' must be a number, got nan (e.g. optimizer.lr = 1e-06)");
  EXPECT_EQ(err(base + "[optimizer]\nbetas = [0.9, nan]\n"),
            "run.toml: key 'optimizer.betas' must be a number, got [0.9,nan] (e.g. optimizer.betas = [0.9,0.999])");
  EXPECT_EQ(err(base + "[train]\nsteps = -inf\n"),
            "run.toml: key 'train.steps' must be an int, got float -inf (e.g. train.steps = 100)");
  const ConfigSchema ranged = {SchemaEntry{"alpha", OptionType::Float, 16.0, "", "scale"}.in(1e-9, 1e9)};
  EXPECT_EQ(error_of([&] { validate_config(parse_toml("alpha = inf\n", "run.toml"), ranged, "run.toml"); }),
            "run.toml: key 'alpha' must be in [1e-09, 1000000000], got inf");
  EXPECT_EQ(error_of([&] { validate_config(parse_toml("alpha = nan\n", "run.toml"), ranged, "run.toml"); }),
            "run.toml: key 'alpha' must be a number, got nan (e.g. alpha = 16.0)");
}

TEST(ConfigSchema, TheSchemaIsCheckedToo) {
  EXPECT_EQ(error_of([] { check_schema({{"a", OptionType::Int, 1, "", ""}, {"a", OptionType::Int, 2, "", ""}}); }),
            "config schema: key 'a' is declared twice");
  EXPECT_EQ(error_of([] { check_schema({{"a", OptionType::Int, 1, "", ""}, {"a.b", OptionType::Int, 2, "", ""}}); }),
            "config schema: 'a' is both a value and the table of 'a.b'");
  EXPECT_EQ(error_of([] { check_schema({{"a", OptionType::Int, "x", "", ""}}); }),
            "config schema: the default of 'a' does not validate: config schema default: key 'a' must be an int, "
            "got string \"x\" (e.g. a = 1)");
  EXPECT_EQ(error_of([] { check_schema({{"a", OptionType::Int, 1, "", "", {"x"}}}); }),
            "config schema: key 'a' has choices but is not a string");
}

TEST(ConfigSchema, MarkdownTable) {
  EXPECT_EQ(schema_markdown(schema()),
            "| key | type | default | unit | meaning |\n"
            "|---|---|---|---|---|\n"
            "| `model.path` | string | required |  | HF directory or llama2.c .bin |\n"
            "| `model.dtype` | string | `\"bf16\"` |  | parameter dtype. One of: `fp32`, `bf16`. |\n"
            "| `optimizer.lr` | float | `1e-06` |  | peak learning rate |\n"
            "| `optimizer.betas` | float list | `[0.9,0.999]` |  | Adam β1, β2 |\n"
            "| `optimizer.clip` | bool | `true` |  | clip gradients \\| by norm |\n"
            "| `train.steps` | int | `100` | steps | optimiser steps |\n"
            "| `train.tags` | string list | `[]` |  | labels for the run |\n"
            "| `rewards` | any | `[]` |  | reward functions (validated by the trainer) |\n");
}

}  // namespace
}  // namespace rlf

// TOML → JSON conversion, syntax errors with file:line:column, and --set
// overrides (dotted paths, TOML scalar values, bare strings, arrays).
#include <gtest/gtest.h>

#include <fstream>

#include "tests/support/test_env.h"
#include "config/toml_config.h"

namespace rlf {
namespace {

using test::error_of;

const char* kConfig = R"(# a run
name = "gsm8k-grpo"
seed = 42

[model]
path = "/models/smol"
dtype = "bf16"

[optimizer]
lr = 1e-6
betas = [0.9, 0.999]
clip = true
warmup = 10

[[rewards]]
kind = "math"
weight = 1.0

[[rewards]]
kind = "format"
weight = 0.5
tags = ["think", "answer"]

[schedule.cosine]
lr_min = 0.0
date = 2024-05-01
)";

TEST(TomlConfig, ParsesTablesArraysAndScalars) {
  Json j = parse_toml(kConfig, "run.toml");
  EXPECT_EQ(j["name"], "gsm8k-grpo");
  EXPECT_TRUE(j["seed"].is_number_integer());
  EXPECT_EQ(j["seed"].get<int64_t>(), 42);
  EXPECT_TRUE(j["optimizer"]["lr"].is_number_float());
  EXPECT_EQ(j["optimizer"]["lr"].get<double>(), 1e-6);
  EXPECT_EQ(j["optimizer"]["betas"], Json::parse("[0.9, 0.999]"));
  EXPECT_EQ(j["optimizer"]["clip"], true);
  ASSERT_TRUE(j["rewards"].is_array());
  ASSERT_EQ(j["rewards"].size(), 2u);
  EXPECT_EQ(j["rewards"][1]["kind"], "format");
  EXPECT_EQ(j["rewards"][1]["tags"], Json::parse(R"(["think", "answer"])"));
  EXPECT_EQ(j["schedule"]["cosine"]["lr_min"].get<double>(), 0.0);
  EXPECT_EQ(j["schedule"]["cosine"]["date"], "2024-05-01");
  // An empty document is an empty table.
  EXPECT_EQ(parse_toml("", "empty.toml"), Json::object());
}

TEST(TomlConfig, SyntaxErrorsNameFileLineAndColumn) {
  // Line 3, column 9: the second '='.
  const std::string err = error_of([] { parse_toml("[optimizer]\nlr = 1e-6\nbeta1 = = 0.9\n", "run.toml"); });
  EXPECT_EQ(err.rfind("run.toml:3:9: ", 0), 0u) << err;
  // A duplicate key: line 3.
  const std::string dup = error_of([] { parse_toml("a = 1\nb = 2\na = 3\n", "dup.toml"); });
  EXPECT_EQ(dup.rfind("dup.toml:3:", 0), 0u) << dup;
  EXPECT_NE(dup.find("'a'"), std::string::npos) << dup;
  // Files are named by their path.
  test::TempDir tmp;
  { std::ofstream(tmp / "bad.toml") << "x = [1, 2\n"; }
  const std::string file_err = error_of([&] { read_toml_file(tmp / "bad.toml"); });
  EXPECT_EQ(file_err.rfind((tmp / "bad.toml").string() + ":", 0), 0u) << file_err;
  EXPECT_EQ(error_of([&] { read_toml_file(tmp / "missing.toml"); }).rfind("cannot open '", 0), 0u);
}

TEST(TomlConfig, OverrideValues) {
  EXPECT_EQ(parse_override_value("1e-6"), Json(1e-6));
  EXPECT_TRUE(parse_override_value("42").is_number_integer());
  EXPECT_EQ(parse_override_value("true"), Json(true));
  EXPECT_EQ(parse_override_value("\"a b\""), Json("a b"));
  EXPECT_EQ(parse_override_value("'lit'"), Json("lit"));
  EXPECT_EQ(parse_override_value("cosine"), Json("cosine"));
  EXPECT_EQ(parse_override_value("/data/x.jsonl"), Json("/data/x.jsonl"));
  EXPECT_EQ(parse_override_value("[1,2]"), Json::parse("[1, 2]"));
  EXPECT_EQ(parse_override_value("{a = 1}"), Json::parse(R"({"a": 1})"));
  EXPECT_EQ(parse_override_value(" 0.5 "), Json(0.5));
  EXPECT_EQ(error_of([] { parse_override_value("[1,"); }).rfind("cannot parse '[1,' as a TOML value", 0), 0u);
}

TEST(TomlConfig, SetOverridesByDottedPath) {
  Json j = parse_toml(kConfig, "run.toml");
  apply_overrides(j, {"optimizer.lr=3e-6", "model.dtype=fp32", "optimizer.betas=[0.8, 0.9]", "seed=7",
                      "rewards.1.weight=2", "name = \"x y\""});
  EXPECT_EQ(j["optimizer"]["lr"].get<double>(), 3e-6);
  EXPECT_EQ(j["model"]["dtype"], "fp32");
  EXPECT_EQ(j["optimizer"]["betas"], Json::parse("[0.8, 0.9]"));
  EXPECT_EQ(j["seed"], 7);
  EXPECT_EQ(j["rewards"][1]["weight"], 2);
  EXPECT_EQ(j["name"], "x y");

  EXPECT_EQ(error_of([&] { apply_override(j, "optimizer.lrr=1"); }),
            "--set optimizer.lrr=1: unknown key 'optimizer.lrr' (keys in 'optimizer': betas, clip, lr, warmup)");
  EXPECT_EQ(error_of([&] { apply_override(j, "optimiser.lr=1"); }),
            "--set optimiser.lr=1: unknown key 'optimiser' (keys in the top level: model, name, optimizer, rewards, "
            "schedule, seed)");
  EXPECT_EQ(error_of([&] { apply_override(j, "seed.x=1"); }),
            "--set seed.x=1: 'seed' is a number, not a table: cannot set 'seed.x'");
  EXPECT_EQ(error_of([&] { apply_override(j, "rewards.5.weight=1"); }),
            "--set rewards.5.weight=1: index 5 is out of range: 'rewards' has 2 elements");
  EXPECT_EQ(error_of([&] { apply_override(j, "optimizer.lr"); }),
            "--set optimizer.lr: expected KEY=VALUE (e.g. --set optimizer.lr=1e-6)");
  EXPECT_EQ(error_of([&] { apply_override(j, "optimizer..lr=1"); }),
            "--set optimizer..lr=1: key 'optimizer..lr' has an empty component");

  // New keys when the caller allows them (tables created on the way).
  apply_override(j, "logging.wandb.project=demo", /*allow_new_keys=*/true);
  EXPECT_EQ(j["logging"]["wandb"]["project"], "demo");
}

}  // namespace
}  // namespace rlf

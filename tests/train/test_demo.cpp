// The embedded default run and the config reference:
//   - docs/config.md lists exactly what `rlf config train` prints (the schema
//     the loader validates with), so the documentation cannot drift;
//   - the demo's config is valid, its policy loads with its own tokenizer,
//     and a shortened demo runs end to end with held-out prompts kept out of SFT.
// The full demo (and its >= 25-point gain) runs in tests/apps (label "demo").
#include <gtest/gtest.h>

#include <algorithm>

#include "data/sft_dataset.h"
#include "rollout/policy.h"
#include "tests/support/test_env.h"
#include "train/config_schema.h"
#include "train/demo.h"
#include "train/metrics.h"
#include "train/toml_config.h"
#include "train/train_config.h"
#include "util/fs.h"

namespace rlf {
namespace {

TEST(ConfigDoc, DocsConfigMdMatchesTheSchema) {
  const std::string doc = read_file(test::source_path("docs/config.md"));
  const std::string begin = "<!-- rlf config train: begin -->\n", end = "<!-- rlf config train: end -->";
  auto b = doc.find(begin), e = doc.find(end);
  ASSERT_NE(b, std::string::npos) << "docs/config.md lacks the begin marker";
  ASSERT_NE(e, std::string::npos) << "docs/config.md lacks the end marker";
  EXPECT_EQ(doc.substr(b + begin.size(), e - b - begin.size()), schema_markdown(train_config_schema()))
      << "docs/config.md is out of date: regenerate the table with `rlf config train`";
}

TEST(ConfigDoc, TomlTemplateParsesAndHoldsEveryDefault) {
  const ConfigSchema& schema = train_config_schema();
  Json j = parse_toml(schema_toml_template(schema), "template");
  for (const auto& e : schema) {
    std::string ptr = "/" + e.key;
    std::replace(ptr.begin(), ptr.end(), '.', '/');
    if (e.type == OptionType::Any || e.default_value.is_null()) {
      EXPECT_FALSE(j.contains(Json::json_pointer(ptr))) << e.key << " should be commented out";
    } else {
      ASSERT_TRUE(j.contains(Json::json_pointer(ptr))) << e.key;
      EXPECT_EQ(j.at(Json::json_pointer(ptr)), e.default_value) << e.key;
    }
  }
  j["model"]["path"] = "model";
  j["data"] = {{"preset", "arithmetic"}};
  j["reward"] = Json::array({{{"type", "math"}}});
  EXPECT_NO_THROW(validate_config(j, schema, "template"));
}

TEST(Demo, ConfigIsValidAndPolicyLoads) {
  test::TempDir dir;
  write_demo_policy(dir / "init", 0);
  TrainConfig cfg = train_config_from_json(demo_config(dir / "init", dir / "run", 0), "demo");
  EXPECT_TRUE(cfg.sft.enabled);
  Policy p = load_policy(cfg.model_path(), "", {});
  EXPECT_EQ(p.tokenizer->decode(p.tokenizer->encode("What is 37 + 48?", false)), "What is 37 + 48?");
  ASSERT_FALSE(p.eos_token_ids.empty());
  EXPECT_EQ(p.eos_token_ids[0], 2);
}

TEST(Demo, BadOverridesNameTheKeyAndWriteNothing) {
  test::TempDir dir;
  DemoOptions o;
  o.out_dir = dir / "demo";
  o.quiet = true;
  o.overrides = {"run.stepz=3"};
  EXPECT_NE(test::error_of([&] { run_demo(o); }).find("unknown key 'run.stepz' (did you mean 'run.steps'?"),
            std::string::npos);
  o.overrides = {"sft.data.wrong_style=carry"};
  EXPECT_NE(test::error_of([&] { run_demo(o); }).find("wrong_style must be \"offset\" or \"drop_carry\""),
            std::string::npos);
  o.overrides = {"sft.data.wrong_fraction=2"};
  EXPECT_NE(test::error_of([&] { run_demo(o); }).find("[sft.data]: wrong_fraction must be in [0, 1]"), std::string::npos);
  // A schedule that does not fit the run fails at load, before SFT runs.
  o.overrides = {"run.steps=5"};
  EXPECT_NE(test::error_of([&] { run_demo(o); }).find("optim.warmup_steps = 10: must be <= the run's optimiser steps, 5"),
            std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(dir / "demo"));
}

TEST(Demo, ShortRunEndToEnd) {
  test::TempDir dir;
  DemoOptions o;
  o.out_dir = dir / "demo";
  o.quiet = true;
  o.overrides = {"sft.steps=3", "run.steps=2", "data.eval_size=10", "rollout.prompts_per_step=2",
                 "rollout.group_size=4", "optim.warmup_steps=1"};
  TrainRunSummary s = run_demo(o);
  EXPECT_EQ(s.steps, 2);
  EXPECT_EQ(s.sft_steps, 3);
  EXPECT_GE(s.pass1_before, 0.0);
  EXPECT_LE(s.pass1_after, 1.0);
  EXPECT_TRUE(std::filesystem::exists(dir / "demo/summary.json"));
  EXPECT_EQ(read_jsonl(dir / "demo/metrics.jsonl").size(), 2u);
  Json j = s.to_json();
  for (const char* k : {"pass1_before", "pass1_after", "wall_s", "steps"}) EXPECT_TRUE(j.contains(k)) << k;
}

}  // namespace
}  // namespace rlf

// The embedded default run and the config reference:
//   - docs/config.md lists exactly what `rlf config train` prints (the schema
//     the loader validates with), so the documentation cannot drift;
//   - the demo's config is valid, its policy loads with its own tokenizer,
//     and a shortened demo runs end to end with held-out prompts kept out of SFT.
// The full demo (and its >= 20-point gains over the control and the warm start)
// runs in tests/apps/test_demo.cpp (label e2e).
#include <gtest/gtest.h>

#include <algorithm>
#include <regex>

#include "data/sft_dataset.h"
#include "rollout/policy.h"
#include "tests/support/test_env.h"
#include "tests/train/run_fixtures.h"
#include "config/config_schema.h"
#include "train/demo.h"
#include "train/metrics.h"
#include "config/toml_config.h"
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

// model.random_init_context: the context changes, the weights do not; a
// directory with another context is rewritten, one with the same kept.
TEST(Demo, RandomInitContextKeepsTheWeights) {
  test::TempDir dir;
  write_demo_policy(dir / "a", 3);
  ensure_demo_policy(dir / "b", 3, 256);
  Policy a = load_policy(dir / "a", "", {}), b = load_policy(dir / "b", "", {});
  EXPECT_EQ(a.loaded.config.max_position_embeddings, 128);
  EXPECT_EQ(b.loaded.config.max_position_embeddings, 256);
  auto pa = a.model()->named_parameters(), pb = b.model()->named_parameters();
  ASSERT_EQ(pa.size(), pb.size());
  for (const auto& kv : pa) EXPECT_TRUE(torch::equal(kv.value(), pb[kv.key()])) << kv.key();
  ensure_demo_policy(dir / "a", 3, 256);
  EXPECT_EQ(load_policy(dir / "a", "", {}).loaded.config.max_position_embeddings, 256);
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
  o.overrides.push_back("run.sft_control=false");
  TrainRunSummary s = run_demo(o);
  EXPECT_EQ(s.steps, 2);
  EXPECT_EQ(s.sft_steps, 3);
  EXPECT_TRUE(std::filesystem::exists(dir / "demo/summary.json"));
  const auto m = read_jsonl(dir / "demo/metrics.jsonl");
  ASSERT_EQ(m.size(), 2u);
  EXPECT_GT(m[0]["optim/steps_applied"].get<double>(), 0.0) << "an RL update was applied";
  // Held-out pass@1 before and after, each measured on the 10 held-out prompts.
  test::expect_pass1_over(s.pass1_before, 10, "pass1_before");
  test::expect_pass1_over(s.pass1_after, 10, "pass1_after");
  const Json j = s.to_json();
  EXPECT_EQ(j["pass1_before"], s.pass1_before);
  EXPECT_EQ(j["pass1_after"], s.pass1_after);
  // SFT and RL moved the weights away from the initial policy, by more than rounding.
  EXPECT_GT(test::relative_change(test::weights_in(dir / "demo/init"), test::weights_in(s.final_model), "model"),
            test::kMinRelativeChange);
}

// The table's last line says what the comparison means, for the data the demo ran on.
TEST(Demo, VerdictSaysWhatTheComparisonMeans) {
  EXPECT_EQ(demo_verdict(1.0, 0.55, false),
            "RL beats imitation by +45.0 points: the teacher forgets the carry, SFT copies the habit, the verifier "
            "rewards the carry.");
  EXPECT_EQ(demo_verdict(0.7, 1.0, true),
            "More SFT beats RL by 30.0 points: the demonstrations are all right, so imitating them is the better use "
            "of the time.");
  EXPECT_EQ(demo_verdict(0.52, 0.5, false), "RL and more SFT end within 5 points (+2.0): neither is ahead on this run.");
  EXPECT_EQ(demo_wrong_fraction(false), 0.7);
  EXPECT_EQ(demo_wrong_fraction(true), 0.0);
}

// The demo's demonstrations: sums worked column by column, the carry dropped
// on about 70% of a carry problem's showings; --clean drops none.
TEST(Demo, DemonstrationsDropTheCarryOnSeventyPercentOfShowings) {
  for (bool clean : {false, true}) {
    test::TempDir dir;
    TrainConfig cfg = train_config_from_json(demo_config(dir / "init", dir / "run", 0, clean), "demo");
    SftDataset sft = SftDataset::load(sft_dataset_options_from_json(cfg.raw["sft"]["data"], "[sft.data]"));
    const std::regex carried(R"(\d\+\d\+1=)");
    size_t carries = 0, dropped = 0;
    for (const SftExample& e : sft.examples()) {
      // A carried column shows three operands ("3+4+1=8"); "3+1=4" is a column whose digit is 1.
      if (std::regex_search(e.response, carried) || !e.correct) ++carries;
      dropped += !e.correct;
    }
    ASSERT_GT(carries, 1000u);
    EXPECT_NEAR(static_cast<double>(dropped) / static_cast<double>(carries), clean ? 0.0 : 0.7, 0.01) << clean;
  }
}

}  // namespace
}  // namespace rlf

// [curation] in whole runs on a tiny random model: decontamination drops the
// training prompts (and SFT pairs) overlapping an evaluation set at load and
// reports them in the run directory; a difficulty-pool run skips prompts by pass rate and
// resumes bit for bit with its pool; the unreliable-reward filter counts and
// drops prompts whose trained reward disagrees with the gold reward.
#include <gtest/gtest.h>

#include <set>

#include "tests/support/test_env.h"
#include "tests/train/run_fixtures.h"
#include "train/metrics.h"
#include "train/train_run.h"
#include "util/fs.h"

namespace rlf {
namespace {

using test::grpo_run_config;
using test::make_tiny_model;
using test::straight_and_resumed;

TEST(CurationRun, DecontaminationDropsOverlappingPromptsAndReportsThem) {
  test::TempDir dir;
  auto model = make_tiny_model(dir);
  const char* questions[] = {"Tom has 3 apples and buys 4 more apples at the shop.",
                             "A train travels 60 miles in 2 hours; find its speed.",
                             "Sue reads 12 pages every day for 5 days.",
                             "There are 7 birds on a tree and 2 fly away.",
                             "A box holds 24 eggs and 6 are broken.",
                             "Max saves 5 dollars each week for 8 weeks.",
                             "The garden has 9 rows of 4 carrots each.",
                             "Lily bakes 30 cookies and gives half to her friend.",
                             "A rope of 20 meters is cut into 5 equal pieces.",
                             "Ben scores 15 points in each of 3 games."};
  std::string train, sft;
  for (const char* q : questions) {
    train += Json{{"question", q}, {"answer", "#### 7"}}.dump() + "\n";
    sft += Json{{"prompt", q}, {"response", " #### 7"}}.dump() + "\n";
  }
  write_file_atomic(dir / "train.jsonl", train);
  write_file_atomic(dir / "sft.jsonl", sft);
  // Lines 2, 5 and 9, recased and reworded: trigram overlaps 1, 1 and 5/9 (> 0.5); nothing else above 0.5.
  write_file_atomic(dir / "test.jsonl",
                    Json{{"question", "A TRAIN travels 60 miles in 2 hours; find its speed!"}, {"answer", "#### 30"}}.dump() + "\n" +
                        Json{{"question", "a box holds 24 eggs, and 6 are broken"}, {"answer", "#### 18"}}.dump() + "\n" +
                        Json{{"question", "Cut a rope of 20 meters into 5 equal pieces."}, {"answer", "#### 4"}}.dump() + "\n");
  Json j = grpo_run_config(model, dir / "run", 1);
  j["data"] = {{"path", (dir / "train.jsonl").string()}, {"preset", "gsm8k"}};
  j["reward"] = Json::array({{{"type", "math"}, {"answer_format", "gsm8k"}}});
  j["curation"] = {{"decontaminate", Json::array({"gsm8k:" + (dir / "test.jsonl").string()})},
                   {"ngram", 3},
                   {"overlap_threshold", 0.5}};
  // The SFT warm start's pairs are decontaminated too.
  j["sft"] = {{"data", {{"path", (dir / "sft.jsonl").string()}}}, {"steps", 2}, {"batch_size", 4},
              {"micro_batch_size", 4}, {"lr", 1e-3}};
  TrainRunOptions quiet;
  quiet.quiet = true;
  run_training(train_config_from_json(j, "decontaminate"), quiet);

  const Json report = Json::parse(read_file(dir / "run/curation/decontamination.json"));
  EXPECT_EQ(report["n_checked"], 10);
  EXPECT_EQ(report["n_dropped"], 3);
  std::set<std::string> ids, eval_ids;
  for (const Json& d : report["dropped"]) ids.insert(d["id"]), eval_ids.insert(d["eval_id"]);
  EXPECT_EQ(ids, (std::set<std::string>{"train.jsonl:2", "train.jsonl:5", "train.jsonl:9"}));
  EXPECT_EQ(eval_ids, (std::set<std::string>{"test.jsonl:1", "test.jsonl:2", "test.jsonl:3"}));
  const auto m = read_jsonl(dir / "run/metrics.jsonl");
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0]["data/decontaminated_prompts"], 3.0);
  const Json sft_report = Json::parse(read_file(dir / "run/curation/decontamination_sft.json"));
  EXPECT_EQ(sft_report["what"], "SFT pairs");
  EXPECT_EQ(sft_report["n_checked"], 10);
  std::set<std::string> sft_ids;
  for (const Json& d : sft_report["dropped"]) sft_ids.insert(d["id"]);
  EXPECT_EQ(sft_ids, (std::set<std::string>{"sft.jsonl:2", "sft.jsonl:5", "sft.jsonl:9"}));

  // Everything overlapping: refused with the fix.
  j["curation"]["overlap_threshold"] = 0.0;
  j["curation"]["ngram"] = 1;
  EXPECT_NE(test::error_of([&] { run_training(train_config_from_json(j, "all"), quiet); })
                .find("curation.decontaminate dropped every training prompt (10); raise curation.overlap_threshold"),
            std::string::npos);
}

// 8 training prompts, 2 per step; prompts whose "has_e" pass rate is <= 0.25
// or >= 0.75 are parked for 10 steps (each comes back after 4 steps, so a
// parked one is skipped). 3 + resume + 3 steps equal 6 straight.
TEST(CurationRun, DifficultyPoolRunSkipsPromptsAndResumesExactly) {
  test::TempDir dir;
  auto model = make_tiny_model(dir);
  auto config = [&](const std::filesystem::path& out, int64_t steps) {
    Json j = grpo_run_config(model, out, steps);
    j["data"]["arithmetic"]["n_problems"] = 12;
    j["algorithm"]["accuracy_reward"] = "has_e";
    j["curation"] = {{"difficulty_pool", true}, {"pool_pass_low", 0.25}, {"pool_pass_high", 0.75},
                     {"pool_revisit_after", 10}};
    return train_config_from_json(j, "pool");
  };
  auto [ma, mb] = straight_and_resumed(config, dir, 6, 3, {"policy"});
  ASSERT_EQ(ma.size(), 6u);
  ASSERT_EQ(mb.size(), 6u);
  double skipped = 0;
  for (size_t i = 0; i < ma.size(); ++i) {
    for (const char* k : {"curation/pool_skipped", "curation/pool_parked", "curation/pool_forced", "reward/mean"})
      EXPECT_EQ(ma[i][k], mb[i][k]) << k << " at step " << i + 1;
    skipped += ma[i]["curation/pool_skipped"].get<double>();
  }
  EXPECT_GT(skipped, 0.0) << "no prompt was skipped in 6 steps";
  const Json report = Json::parse(read_file(dir / "a/curation/prompt_pool.json"));
  EXPECT_EQ(report["step"], 6);
  EXPECT_EQ(report["n_prompts"], 8);
  EXPECT_EQ(report, Json::parse(read_file(dir / "b/curation/prompt_pool.json")));

  // A run without a pool cannot be resumed with one.
  TrainRunOptions quiet;
  quiet.quiet = true;
  Json j = grpo_run_config(model, dir / "c", 2);
  run_training(train_config_from_json(j, "plain"), quiet);
  j["run"]["steps"] = 4;
  j["curation"] = {{"difficulty_pool", true}};
  TrainRunOptions resume = quiet;
  resume.resume = true;
  EXPECT_NE(test::error_of([&] { run_training(train_config_from_json(j, "plain"), resume); })
                .find("a run that did not curate its prompts cannot be resumed with curation"),
            std::string::npos);
}

// The trained reward (math: 0 on a random model) against a held-out gold
// reward ("has_e", weight 0): groups where a fifth of the episodes or more
// contain an "e" disagree; one disagreement drops the prompt.
TEST(CurationRun, UnreliableRewardPromptsAreCountedAndDropped) {
  test::TempDir dir;
  auto model = make_tiny_model(dir);
  Json j = grpo_run_config(model, dir / "run", 4);
  j["reward"][1]["weight"] = 0.0;
  j["algorithm"]["gold_reward"] = "has_e";
  j["curation"] = {{"reward_disagreement", 0.2}, {"drop_disagreeing_after", 1}};
  TrainRunOptions quiet;
  quiet.quiet = true;
  run_training(train_config_from_json(j, "unreliable"), quiet);
  const auto m = read_jsonl(dir / "run/metrics.jsonl");
  ASSERT_EQ(m.size(), 4u);
  double disagreements = 0, dropped = 0;
  for (const Json& s : m) {
    disagreements += s["curation/disagreements"].get<double>();
    EXPECT_GE(s["curation/dropped_prompts"].get<double>(), dropped);  // never undone
    dropped = s["curation/dropped_prompts"].get<double>();
  }
  EXPECT_GT(disagreements, 0.0);
  EXPECT_EQ(dropped, disagreements) << "with drop_disagreeing_after = 1 every disagreeing prompt is dropped";
  const Json report = Json::parse(read_file(dir / "run/curation/prompt_pool.json"));
  EXPECT_EQ(report["n_dropped"].get<double>(), dropped);
  for (const Json& p : report["prompts"]) EXPECT_EQ(p["dropped"].get<bool>(), p["disagreements"].get<int64_t>() > 0);

  // The filter needs a gold reward to compare with.
  j["algorithm"].erase("gold_reward");
  EXPECT_NE(test::error_of([&] { train_config_from_json(j, "no gold"); })
                .find("curation.reward_disagreement compares the trained reward with algorithm.gold_reward"),
            std::string::npos);
}

// Config errors name the key and the fix (no run: only the loader).
TEST(CurationConfig, ErrorsNameTheKey) {
  const Json ok = grpo_run_config("/m", "/o", 2);
  Json bad = ok;
  bad["curation"] = {{"overlap_threshold", 1.0}};
  test::expect_config_error(bad, "key 'curation.overlap_threshold' must be in [0, 0.999999], got 1");
  bad["curation"] = {{"ngram", 0}};
  test::expect_config_error(bad, "key 'curation.ngram' must be in [1, 1000], got 0");
  bad["curation"] = {{"difficulty_pool", true}, {"pool_pass_low", 0.5}, {"pool_pass_high", 0.5}};
  test::expect_config_error(bad, "curation.pool_pass_low (0.5) must be below curation.pool_pass_high (0.5)");
  bad["curation"] = {{"drop_disagreeing_after", 2}};
  test::expect_config_error(bad, "curation.drop_disagreeing_after = 2 needs curation.reward_disagreement > 0");
  bad["curation"] = {{"decontaminate", "gsm8k:test.jsonl"}};
  test::expect_config_error(bad, "curation.decontaminate must be an array of evaluation sets");
  bad = ok;
  bad["trainer"]["kind"] = "dpo";
  bad["preference"]["data"] = {{"path", "pairs.jsonl"}};
  bad.erase("data");
  bad["curation"] = {{"decontaminate", Json::array({"test.jsonl"})}};
  test::expect_config_error(bad, "curation.decontaminate drops [data] training prompts and [sft.data] pairs: add one or set "
                    "curation.decontaminate = []");
  bad["curation"] = {{"difficulty_pool", true}};
  test::expect_config_error(bad, "curation.difficulty_pool and curation.reward_disagreement decide which prompts RL samples: they "
                    "need trainer.kind = \"grpo\"");
  bad = ok;
  bad["curation"] = {{"decontaminate", Json::array({"gsm8k:test.jsonl"})}, {"difficulty_pool", true}};
  EXPECT_NO_THROW(train_config_from_json(bad, "cfg.toml"));  // files are read when the run loads its data
}

}  // namespace
}  // namespace rlf

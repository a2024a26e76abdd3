// TensorBoard event files (train/tensorboard.h) read back by the
// `tensorboard` package (the oracle venv): every finite number of
// metrics.jsonl, at its step, also after a resume truncated the log.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "tests/support/test_env.h"
#include "tests/train/run_fixtures.h"
#include "train/metrics.h"
#include "train/tensorboard.h"
#include "train/train_run.h"

namespace rlf {
namespace {

TEST(TensorBoard, Crc32cIsCastagnolis) {
  const std::string s = "123456789";
  EXPECT_EQ(crc32c(s.data(), s.size()), 0xE3069283u);
  EXPECT_EQ(crc32c("", 0), 0u);
}

// The scalars `tensorboard` reads from `dir`, by tag.
Json read_back(const std::filesystem::path& dir) {
  const std::filesystem::path out = dir.parent_path() / "tb.json";
  auto r = test::run_command(test::shell_quote(test::oracle_python()) + " " +
                             test::shell_quote(test::source_path("tests/oracle/read_tensorboard.py").string()) + " " +
                             test::shell_quote(dir.string()) + " " + test::shell_quote(out.string()));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  return r.exit_code == 0 ? read_json_file(out.string()) : Json();
}

// Every finite number of every metrics line appears at its step with its value (as float32).
void expect_mirrors_metrics(const Json& tb, const std::filesystem::path& metrics) {
  const auto lines = read_jsonl(metrics);
  ASSERT_FALSE(lines.empty());
  size_t n = 0;
  for (const Json& line : lines)
    for (const auto& [k, v] : line.items()) {
      if (k == "step" || k == "time" || !v.is_number()) continue;
      ASSERT_TRUE(tb["tags"].contains(k)) << k;
      bool found = false;
      for (const auto& sv : tb["tags"][k])
        if (sv[0] == line["step"]) {
          EXPECT_EQ(sv[1].get<double>(), static_cast<double>(static_cast<float>(v.get<double>()))) << k;
          found = true;
        }
      EXPECT_TRUE(found) << k << " at step " << line["step"];
      ++n;
    }
  size_t points = 0;
  for (const auto& [tag, svs] : tb["tags"].items()) points += svs.size();
  EXPECT_EQ(points, n) << "scalars that metrics.jsonl does not have";
}

TEST(TensorBoard, TheTensorboardPackageReadsEveryMetricBackAlsoAfterAResume) {
  RLF_REQUIRE_ORACLE();
  test::TempDir dir;
  const auto run = dir / "run";
  {
    MetricsWriter w(run / "metrics.jsonl", JsonlWriterOptions{0}, run);
    for (int s = 1; s <= 5; ++s)
      w.write_step(s, {{"reward/mean", 0.1 * s}, {"loss", -1.0 / s}, {"nan_metric", std::nan("")}},
                   Json{{"label", "text is not a scalar"}});
  }
  Json tb = read_back(run);
  EXPECT_EQ(tb["files"], 1);
  EXPECT_EQ(tb["tags"]["reward/mean"].size(), 5u);
  EXPECT_FALSE(tb["tags"].contains("nan_metric"));
  expect_mirrors_metrics(tb, run / "metrics.jsonl");
  // Resume from step 3: steps 4 and 5 leave the log and the event files alike.
  {
    MetricsWriter w(run / "metrics.jsonl", JsonlWriterOptions{3}, run);
    w.write_step(4, {{"reward/mean", 0.44}, {"loss", -0.2}});
  }
  tb = read_back(run);
  EXPECT_EQ(tb["files"], 1);
  EXPECT_EQ(tb["tags"]["reward/mean"].size(), 4u);
  EXPECT_EQ(tb["tags"]["reward/mean"][3][1].get<double>(), static_cast<double>(0.44f));
  expect_mirrors_metrics(tb, run / "metrics.jsonl");
}

TEST(TensorBoard, ATrainingRunWritesItsMetricsAsEventFiles) {
  RLF_REQUIRE_ORACLE();
  test::TempDir dir;
  const auto model = test::make_tiny_model(dir);
  run_training(train_config_from_json(test::grpo_run_config(model, dir / "grpo", 3), "grpo"), test::quiet_run());
  const Json tb = read_back(dir / "grpo");
  ASSERT_TRUE(tb["tags"].contains("reward/mean")) << tb.dump();
  EXPECT_EQ(tb["tags"]["reward/mean"].size(), 3u);
  expect_mirrors_metrics(tb, dir / "grpo/metrics.jsonl");
  Json off = test::grpo_run_config(model, dir / "off", 1);
  off["run"]["tensorboard"] = false;
  run_training(train_config_from_json(off, "off"), test::quiet_run());
  for (const auto& e : std::filesystem::directory_iterator(dir / "off"))
    EXPECT_NE(e.path().filename().string().rfind("events.out.tfevents.", 0), 0u) << e.path();
}

}  // namespace
}  // namespace rlf

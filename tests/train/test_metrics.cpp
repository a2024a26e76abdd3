// Run logs: metrics/samples JSONL (flushed per line, truncated on resume,
// torn last line tolerated), the end-of-run summary, the progress display in
// plain mode, and the HTML plot.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <regex>

#include "tests/support/test_env.h"
#include "train/metrics.h"
#include "train/phase_memory.h"
#include "train/plot.h"
#include "train/progress.h"
#include "util/fs.h"

namespace rlf {
namespace {

namespace fs = std::filesystem;

using test::error_of;

TEST(Metrics, OneFlushedLinePerStepAndResumeDropsLaterSteps) {
  test::TempDir tmp;
  const fs::path path = tmp / "run" / "metrics.jsonl";
  {
    MetricsWriter w(path);
    for (int64_t s = 1; s <= 5; ++s) {
      w.write_step(s, {{"reward_mean", 0.1 * s}, {"loss", s == 3 ? NAN : 1.0 / s}}, {{"phase", "train"}});
      // Flushed: readable while the writer is open.
      EXPECT_EQ(read_jsonl(path).size(), static_cast<size_t>(s));
    }
  }
  std::vector<Json> recs = read_jsonl(path);
  ASSERT_EQ(recs.size(), 5u);
  EXPECT_EQ(recs[0]["step"], 1);
  EXPECT_DOUBLE_EQ(recs[1]["reward_mean"].get<double>(), 0.2);
  EXPECT_TRUE(recs[2]["loss"].is_null());  // NaN → null
  EXPECT_EQ(recs[4]["phase"], "train");
  EXPECT_TRUE(recs[4]["time"].is_number());

  // A crash mid-line, then a resume from the checkpoint of step 3.
  { std::ofstream(path, std::ios::app) << "{\"step\": 6, \"rew"; }
  EXPECT_EQ(read_jsonl(path).size(), 5u);  // the torn last line is ignored
  {
    MetricsWriter w(path, {.resume_step = 3});
    w.write_step(4, {{"reward_mean", 0.44}});
  }
  recs = read_jsonl(path);
  ASSERT_EQ(recs.size(), 4u);
  EXPECT_EQ(recs[2]["step"], 3);
  EXPECT_EQ(recs[3]["step"], 4);
  EXPECT_DOUBLE_EQ(recs[3]["reward_mean"].get<double>(), 0.44);
  EXPECT_GE(recs[3]["time"].get<double>(), recs[2]["time"].get<double>());

  // A bad line that is not the last one is an error naming the line.
  { std::ofstream(path, std::ios::app) << "oops\n{\"step\": 9}\n"; }
  EXPECT_EQ(error_of([&] { read_jsonl(path); }), path.string() + ":5: not valid JSON");
}

TEST(Metrics, SamplesLogEveryNSteps) {
  test::TempDir tmp;
  const fs::path path = tmp / "samples.jsonl";
  SamplesWriter w(path, {.every_n_steps = 5, .max_per_step = 2});
  std::vector<SampleRecord> samples(3);
  for (int i = 0; i < 3; ++i) {
    samples[i].prompt = "2+" + std::to_string(i) + "=";
    samples[i].completion = std::to_string(2 + i);
    samples[i].reward = 1.0;
    samples[i].rewards = {{"math", 1.0}, {"format", 0.5}};
    samples[i].advantage = 0.25 * i;
    samples[i].extra = {{"group", i / 2}};
  }
  EXPECT_EQ(w.write(3, samples), 0);
  EXPECT_EQ(w.write(5, samples), 2);
  EXPECT_EQ(w.write(10, samples), 2);
  EXPECT_TRUE(w.due(0));
  EXPECT_FALSE(w.due(7));
  std::vector<Json> recs = read_jsonl(path);
  ASSERT_EQ(recs.size(), 4u);
  EXPECT_EQ(recs[1].dump(),
            "{\"advantage\":0.25,\"completion\":\"3\",\"group\":0,\"index\":1,\"prompt\":\"2+1=\",\"reward\":1.0,"
            "\"rewards\":{\"format\":0.5,\"math\":1.0},\"step\":5}");
  EXPECT_EQ(recs[3]["step"], 10);
}

TEST(Metrics, SummaryTable) {
  std::vector<Json> recs;
  for (int s = 1; s <= 20; ++s) recs.push_back({{"step", s}, {"time", s * 2.0}, {"reward", s / 20.0}});
  recs.push_back({{"step", 21}, {"reward", nullptr}});
  auto sums = summarize_metrics(recs);
  ASSERT_EQ(sums.size(), 1u);
  EXPECT_EQ(sums[0].key, "reward");
  EXPECT_EQ(sums[0].n, 20);
  EXPECT_DOUBLE_EQ(sums[0].first, 0.05);
  EXPECT_DOUBLE_EQ(sums[0].last, 1.0);
  EXPECT_DOUBLE_EQ(sums[0].min, 0.05);
  EXPECT_DOUBLE_EQ(sums[0].max, 1.0);
  EXPECT_DOUBLE_EQ(sums[0].mean_last, 0.975);  // the last 10%: 0.95 and 1
  const std::string table = format_metrics_summary(summarize_metrics(recs, {"reward", "missing"}));
  EXPECT_EQ(table,
            "metric   first       last        min         max         mean(last 10%)\n"
            "reward   0.05        1           0.05        1           0.975\n"
            "missing  (no finite values)\n");
}

TEST(Progress, PlainLinesWhenNotATty) {
  test::TempDir tmp;
  const fs::path path = tmp / "progress.txt";
  std::FILE* f = std::fopen(path.c_str(), "w");
  ASSERT_NE(f, nullptr);
  {
    ProgressBar bar({.total_steps = 4, .start_step = 0, .label = "grpo", .plain_every = 2}, f);
    EXPECT_FALSE(bar.is_tty());
    bar.update(1, {{"reward", 0.5}});
    bar.update(2, {{"reward", 0.53125}, {"loss", 1.25e-5}});
    bar.message("checkpoint saved");
    bar.update(4, {});
  }
  std::fclose(f);
  std::vector<std::string> lines = split_lines(read_file(path));
  ASSERT_EQ(lines.size(), 3u);
  // The times are the wall clock's, whatever they are (LineContents checks them for a given elapsed time).
  const std::regex first(R"(^grpo step 2/4 \(50%\) elapsed \d\d:\d\d eta \d\d:\d\d reward=0\.5312 loss=1\.25e-05)");
  EXPECT_TRUE(std::regex_search(lines[0], first)) << lines[0];
  EXPECT_EQ(lines[1], "checkpoint saved");
  EXPECT_EQ(lines[2].rfind("grpo step 4/4 (100%)", 0), 0u) << lines[2];

  EXPECT_EQ(format_duration(42.4), "00:42");
  EXPECT_EQ(format_duration(3725), "1:02:05");
  EXPECT_EQ(format_duration(NAN), "--:--");
  EXPECT_EQ(format_value(0.531249), "0.5312");
}

TEST(Progress, LineContents) {
  ProgressBar bar({.total_steps = 100, .start_step = 20, .label = "train", .force_plain = true}, stderr);
  // 10 steps done in this process in 20 s: 2 s/step, 70 left → 2:20.
  EXPECT_EQ(bar.line(30, 20.0, {{"reward", 0.25}}), "train step 30/100 (30%) elapsed 00:20 eta 02:20 reward=0.25");
}

TEST(Plot, HtmlWithOneSvgPerMetric) {
  test::TempDir tmp;
  const fs::path path = tmp / "metrics.jsonl";
  {
    MetricsWriter w(path);
    for (int64_t s = 1; s <= 30; ++s)
      w.write_step(s, {{"reward_mean", 0.02 * s}, {"accuracy", s % 3 == 0 ? 0.5 : 0.25}, {"loss", 1.0 / s}});
  }
  write_metrics_plot(path, tmp / "plot.html", {"reward_mean", "accuracy"}, {.title = "run <1>", .smoothing = 0.6});
  const std::string html = read_file(tmp / "plot.html");
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  size_t n_svg = 0;
  for (size_t at = html.find("<svg"); at != std::string::npos; at = html.find("<svg", at + 1)) ++n_svg;
  EXPECT_EQ(n_svg, 2u);
  EXPECT_NE(html.find("<title>reward_mean</title>"), std::string::npos);
  EXPECT_NE(html.find("<title>accuracy</title>"), std::string::npos);
  EXPECT_EQ(html.find("<title>loss</title>"), std::string::npos);
  EXPECT_NE(html.find("run &lt;1&gt;"), std::string::npos);
  EXPECT_NE(html.find("<polyline"), std::string::npos);
  EXPECT_EQ(html.find("<script"), std::string::npos);  // self-contained, no JS
  EXPECT_NE(html.find("last 0.6,"), std::string::npos);

  // All numeric metrics when no keys are given.
  const std::string all = render_metrics_html(read_jsonl(path), {});
  EXPECT_NE(all.find("<title>loss</title>"), std::string::npos);
  EXPECT_EQ(all.find("<title>time</title>"), std::string::npos);

  EXPECT_EQ(error_of([&] { write_metrics_plot(path, tmp / "x.html", {"reward"}); }),
            "plotting '" + path.string() +
                "': plot: no record has a numeric 'reward' with a numeric 'step' (metrics present: accuracy, loss, "
                "reward_mean)");
}

// A phase's peak (train/phase_memory.h) on the CPU: the resident memory's,
// under the phase's name, at least what the phase touched; no CUDA key.
TEST(PhasePeak, WritesTheResidentPeakAndNoCudaKeyOffTheGpu) {
  PhasePeak peak(torch::kCPU);
  peak.begin();
  const double before = current_rss_mb();
  std::vector<char> touched(64 << 20, 1);  // 64 MB, written
  Json m;
  peak.write(m, "update");
  EXPECT_GE(m["mem/rss_peak_mb_update"].get<double>(), before + 60.0) << touched[12345];
  EXPECT_FALSE(m.contains("mem/cuda_peak_mb_update"));
  EXPECT_EQ(peak.cuda_peak_mb(), 0.0);
}

}  // namespace
}  // namespace rlf

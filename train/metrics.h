// Run logs as JSON Lines: the metrics log (one object per optimiser step), the
// samples log (prompt, completion, rewards every N steps), reading them back,
// and the end-of-run summary.
//
// Files are opened for appending and each line is flushed as it is written,
// so a crash loses at most the line being written. On resume from checkpoint
// step S, open with resume_step = S: lines of later steps (written after that
// checkpoint, before the crash) and a torn last line are dropped first, so the
// log has exactly one line per step.
#pragma once

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "train/tensorboard.h"
#include "util/json_util.h"

namespace rlf {

struct JsonlWriterOptions {
  int64_t resume_step = -1;  // >= 0: drop existing lines whose "step" is > this (and unparsable ones)
  bool sync = false;         // fsync the file after each line (a record written is on disk when write() returns)
};

// Appends JSON objects to a .jsonl file, one per line, flushed per line.
class JsonlWriter {
 public:
  explicit JsonlWriter(const std::filesystem::path& path, const JsonlWriterOptions& options = {});
  ~JsonlWriter();
  JsonlWriter(const JsonlWriter&) = delete;
  JsonlWriter& operator=(const JsonlWriter&) = delete;

  // Writes `record` (must be an object) as one line and flushes it.
  void write(const Json& record);
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
  std::FILE* file_ = nullptr;
  bool sync_ = false;
};

// The metrics log: write_step(step, {"reward_mean": 0.4, ...}) writes
// {"step": step, "time": seconds since the writer opened (+ the resumed
// run's time), ...}. Non-finite values are written as null.
//
// With `tensorboard_dir`, every step's finite numbers are also written as
// TensorBoard scalars (train/tensorboard.h) into a fresh events file there;
// the dir's older events files are replaced by one holding the log's kept
// lines, so after a resume the event files show exactly metrics.jsonl.
class MetricsWriter {
 public:
  explicit MetricsWriter(const std::filesystem::path& path, const JsonlWriterOptions& options = {},
                         const std::filesystem::path& tensorboard_dir = {});
  ~MetricsWriter();
  void write_step(int64_t step, const std::map<std::string, double>& values, const Json& extra = Json::object());
  const std::filesystem::path& path() const { return out_.path(); }

 private:
  JsonlWriter out_;
  std::unique_ptr<TensorBoardWriter> tensorboard_;
  double time_offset_ = 0.0;  // "time" of the last kept line when resuming
  double start_ = 0.0;        // steady clock at construction, seconds
};

// One generated sample for the samples log.
struct SampleRecord {
  std::string prompt;
  std::string completion;
  double reward = 0.0;                    // total reward
  std::map<std::string, double> rewards;  // per reward function
  double advantage = 0.0;
  Json extra = Json::object();            // anything else (group id, answer, ...)
};

struct SamplesLogOptions {
  int64_t every_n_steps = 10;  // log samples on steps divisible by this; 0 = never
  int64_t max_per_step = 8;    // at most this many samples per logged step (the first ones)
};

// Writes {"step", "index", "prompt", "completion", "reward", "rewards", "advantage", ...} lines.
class SamplesWriter {
 public:
  SamplesWriter(const std::filesystem::path& path, const SamplesLogOptions& options = {},
                const JsonlWriterOptions& writer_options = {});
  // True when `step` is a logging step.
  bool due(int64_t step) const;
  // Writes up to max_per_step samples if due(step); returns how many were written.
  int64_t write(int64_t step, const std::vector<SampleRecord>& samples);

 private:
  SamplesLogOptions options_;
  JsonlWriter out_;
};

// Every object of a .jsonl file; blank lines are skipped, a torn (unparsable)
// LAST line is ignored, any other bad line is an error naming file and line.
std::vector<Json> read_jsonl(const std::filesystem::path& path);

// Per-key statistics over the steps of a metrics log.
struct MetricSummary {
  std::string key;
  int64_t n = 0;          // steps with a finite value
  double first = 0.0, last = 0.0, min = 0.0, max = 0.0;
  double mean_last = 0.0;  // mean over the last 10% of those steps (at least 1)
};

// Summaries of `keys` (all numeric keys but "step"/"time" when empty), in order.
std::vector<MetricSummary> summarize_metrics(const std::vector<Json>& records, const std::vector<std::string>& keys = {});

// A fixed-width table of the summaries, one row per key, e.g.
//   metric            first      last       min        max        mean(last 10%)
//   reward_mean       0.1        0.62       0.1        0.7        0.6
std::string format_metrics_summary(const std::vector<MetricSummary>& summaries);

}  // namespace rlf

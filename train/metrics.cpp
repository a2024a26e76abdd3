#include "train/metrics.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <iomanip>
#include <set>
#include <sstream>

#include <unistd.h>

#include "util/clock.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/write_target.h"

namespace rlf {

namespace {


// Keeps the lines of an existing log whose "step" is <= resume_step
// (dropping torn/unparsable ones); rewrites the file atomically if anything changed.
void truncate_after_step(const std::filesystem::path& path, int64_t resume_step) {
  if (!std::filesystem::exists(path)) return;
  std::string kept;
  bool changed = false;
  const std::string text = read_file(path);
  for (const std::string& line : split_lines(text)) {
    if (line.empty()) continue;
    Json j = Json::parse(line, nullptr, /*allow_exceptions=*/false);
    const bool keep = j.is_object() && j.contains("step") && j["step"].is_number_integer() &&
                      j["step"].get<int64_t>() <= resume_step;
    if (keep) {
      kept += line + "\n";
    } else {
      changed = true;
    }
  }
  if (!text.empty() && text.back() != '\n') changed = true;
  if (changed) write_file_atomic(path, kept);
}

}  // namespace

JsonlWriter::JsonlWriter(const std::filesystem::path& path, const JsonlWriterOptions& options)
    : path_(path), sync_(options.sync) {
  with_context("opening log '" + path.string() + "'", [&] {
    if (path.has_parent_path()) ensure_directory(path.parent_path());
    check_file_target(path);  // a regular file or a new name (appending to a FIFO would block the run)
    if (options.resume_step >= 0) truncate_after_step(path, options.resume_step);
    file_ = std::fopen(path.c_str(), "ab");
    check(file_ != nullptr, "cannot open for appending: ", std::strerror(errno));
  });
}

JsonlWriter::~JsonlWriter() {
  if (file_) std::fclose(file_);
}

void JsonlWriter::write(const Json& record) {
  check(record.is_object(), "log '", path_.string(), "': a record must be a JSON object, got ", record.type_name());
  const std::string line = json_line(record) + "\n";
  const bool ok = std::fwrite(line.data(), 1, line.size(), file_) == line.size() && std::fflush(file_) == 0 &&
                  (!sync_ || ::fsync(::fileno(file_)) == 0);
  check(ok, "cannot write to log '", path_.string(), "': ", std::strerror(errno));
}

static Json finite_or_null(double v) { return std::isfinite(v) ? Json(v) : Json(nullptr); }

namespace {

double epoch_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// The numbers of a metrics line, as TensorBoard scalars (step and time are the event's own).
std::map<std::string, double> scalars_of(const Json& line) {
  std::map<std::string, double> out;
  for (const auto& [k, v] : line.items())
    if (k != "step" && k != "time" && v.is_number()) out[k] = v.get<double>();
  return out;
}

}  // namespace

MetricsWriter::MetricsWriter(const std::filesystem::path& path, const JsonlWriterOptions& options,
                             const std::filesystem::path& tensorboard_dir)
    : out_(path, options), start_(now_seconds()) {
  std::vector<Json> kept;
  if (options.resume_step >= 0 || !tensorboard_dir.empty()) kept = read_jsonl(path);
  if (options.resume_step >= 0 && !kept.empty() && kept.back().contains("time") && kept.back()["time"].is_number())
    time_offset_ = kept.back()["time"].get<double>();
  if (!tensorboard_dir.empty()) {
    namespace fs = std::filesystem;
    std::error_code ec;
    if (fs::is_directory(tensorboard_dir, ec))
      for (const auto& e : fs::directory_iterator(tensorboard_dir))
        if (e.path().filename().string().rfind("events.out.tfevents.", 0) == 0) fs::remove(e.path());
    tensorboard_ = std::make_unique<TensorBoardWriter>(tensorboard_dir);
    const double now = epoch_seconds();
    for (const Json& line : kept) {
      if (!line.contains("step") || !line["step"].is_number_integer()) continue;
      const double t = line.contains("time") && line["time"].is_number() ? line["time"].get<double>() : time_offset_;
      tensorboard_->add_scalars(line["step"].get<int64_t>(), now - (time_offset_ - t), scalars_of(line));
    }
  }
}

MetricsWriter::~MetricsWriter() = default;

void MetricsWriter::write_step(int64_t step, const std::map<std::string, double>& values, const Json& extra) {
  Json j = Json::object();
  j["step"] = step;
  j["time"] = std::round((time_offset_ + now_seconds() - start_) * 1000.0) / 1000.0;
  for (const auto& [k, v] : values) j[k] = finite_or_null(v);
  if (extra.is_object()) {
    for (const auto& [k, v] : extra.items()) j[k] = v;
  }
  out_.write(j);
  if (tensorboard_) tensorboard_->add_scalars(step, epoch_seconds(), scalars_of(j));
}

SamplesWriter::SamplesWriter(const std::filesystem::path& path, const SamplesLogOptions& options,
                             const JsonlWriterOptions& writer_options)
    : options_(options), out_(path, writer_options) {
  check(options.every_n_steps >= 0, "samples_log.every_n_steps = ", options.every_n_steps, ": must be >= 0 (0 = never)");
  check(options.max_per_step >= 0, "samples_log.max_per_step = ", options.max_per_step, ": must be >= 0");
}

bool SamplesWriter::due(int64_t step) const { return options_.every_n_steps > 0 && step % options_.every_n_steps == 0; }

int64_t SamplesWriter::write(int64_t step, const std::vector<SampleRecord>& samples) {
  if (!due(step)) return 0;
  const int64_t n = std::min<int64_t>(options_.max_per_step, static_cast<int64_t>(samples.size()));
  for (int64_t i = 0; i < n; ++i) {
    const SampleRecord& s = samples[static_cast<size_t>(i)];
    Json j = {{"step", step}, {"index", i}, {"prompt", s.prompt}, {"completion", s.completion},
              {"reward", finite_or_null(s.reward)}, {"advantage", finite_or_null(s.advantage)}};
    Json rewards = Json::object();
    for (const auto& [k, v] : s.rewards) rewards[k] = finite_or_null(v);
    j["rewards"] = rewards;
    if (s.extra.is_object()) {
      for (const auto& [k, v] : s.extra.items()) j[k] = v;
    }
    out_.write(j);
  }
  return n;
}

std::vector<Json> read_jsonl(const std::filesystem::path& path) {
  const std::string text = read_file(path);
  const std::vector<std::string> lines = split_lines(text);
  std::vector<Json> out;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (lines[i].empty()) continue;
    Json j = Json::parse(lines[i], nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded()) {
      if (i + 1 == lines.size()) break;  // torn last line (a crash mid-write)
      fail(path.string(), ":", i + 1, ": not valid JSON");
    }
    check(j.is_object(), path.string(), ":", i + 1, ": expected a JSON object, got ", j.type_name());
    out.push_back(std::move(j));
  }
  return out;
}

std::vector<MetricSummary> summarize_metrics(const std::vector<Json>& records, const std::vector<std::string>& keys) {
  std::vector<std::string> names = keys;
  if (names.empty()) {
    std::set<std::string> seen;
    for (const Json& r : records) {
      for (const auto& [k, v] : r.items()) {
        if (k != "step" && k != "time" && v.is_number() && seen.insert(k).second) names.push_back(k);
      }
    }
  }
  std::vector<MetricSummary> out;
  for (const std::string& key : names) {
    std::vector<double> xs;
    for (const Json& r : records) {
      auto it = r.find(key);
      if (it != r.end() && it->is_number() && std::isfinite(it->get<double>())) xs.push_back(it->get<double>());
    }
    MetricSummary s;
    s.key = key;
    s.n = static_cast<int64_t>(xs.size());
    if (!xs.empty()) {
      s.first = xs.front();
      s.last = xs.back();
      s.min = *std::min_element(xs.begin(), xs.end());
      s.max = *std::max_element(xs.begin(), xs.end());
      const size_t tail = std::max<size_t>(1, xs.size() / 10);
      double sum = 0.0;
      for (size_t i = xs.size() - tail; i < xs.size(); ++i) sum += xs[i];
      s.mean_last = sum / static_cast<double>(tail);
    }
    out.push_back(s);
  }
  return out;
}

std::string format_metrics_summary(const std::vector<MetricSummary>& summaries) {
  size_t width = 6;
  for (const auto& s : summaries) width = std::max(width, s.key.size());
  std::ostringstream out;
  auto cell = [&](double v) {
    std::ostringstream c;
    c << std::setprecision(4) << v;
    out << "  " << std::left << std::setw(10) << c.str();
  };
  out << std::left << std::setw(static_cast<int>(width)) << "metric";
  for (const char* h : {"first", "last", "min", "max"}) out << "  " << std::setw(10) << h;
  out << "  mean(last 10%)\n";
  for (const auto& s : summaries) {
    out << std::left << std::setw(static_cast<int>(width)) << s.key;
    if (s.n == 0) {
      out << "  (no finite values)\n";
      continue;
    }
    cell(s.first);
    cell(s.last);
    cell(s.min);
    cell(s.max);
    std::ostringstream c;
    c << std::setprecision(4) << s.mean_last;
    out << "  " << c.str() << "\n";
  }
  return out.str();
}

}  // namespace rlf

// Metric curves as a self-contained HTML page: one inline SVG chart per metric
// (no JavaScript, no external files), drawn from a metrics .jsonl log. Open it
// in any browser, attach it to a report, or copy it off a headless machine.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "util/json_util.h"

namespace rlf {

struct PlotOptions {
  std::string title = "rlf training metrics";  // page heading
  std::string x_key = "step";                  // x axis (a numeric key of every record)
  double smoothing = 0.0;   // EMA weight of the past in [0, 1); > 0 draws a smoothed curve over the raw one
  int width = 640;          // chart size in pixels
  int height = 240;
};

// An HTML page with one chart per key of `keys` (every numeric key but the
// x key and "time" when empty). Records without a finite value for a key are
// skipped for that chart. Errors: a key no record has, listing those present.
std::string render_metrics_html(const std::vector<Json>& records, const std::vector<std::string>& keys,
                                const PlotOptions& options = {});

// Reads `metrics_jsonl` (read_jsonl) and writes render_metrics_html to `out_html` atomically.
void write_metrics_plot(const std::filesystem::path& metrics_jsonl, const std::filesystem::path& out_html,
                        const std::vector<std::string>& keys = {}, const PlotOptions& options = {});

}  // namespace rlf

// Terminal progress for a training run: a one-line bar with rate, ETA and live
// values, redrawn in place on a TTY; plain log lines otherwise (pipes, files,
// CI), so logs stay readable.
//
//   TTY:    train ███████░░░░░░░░░  40/100  40% 01:20<02:00 1.9 s/step reward=0.53 loss=0.012
//   plain:  train step 40/100 (40%) elapsed 01:20 eta 02:00 reward=0.53 loss=0.012
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

namespace rlf {

// "42s" → "00:42", "3725s" → "1:02:05"; negative or non-finite → "--:--".
std::string format_duration(double seconds);

// A compact number for live values: 4 significant digits ("0.5312", "1.235e-05").
std::string format_value(double v);

struct ProgressOptions {
  int64_t total_steps = 0;     // steps of the run (0: unknown, no percentage or ETA)
  int64_t start_step = 0;      // first step of this process (after a resume); the rate counts from here
  std::string label = "train"; // prefix of every line
  int bar_width = 24;          // characters of the bar on a TTY
  int64_t plain_every = 1;     // plain mode: print every N-th step (and the last one)
  double min_redraw_s = 0.1;   // TTY: redraw at most this often (seconds)
  bool force_plain = false;    // never draw the bar, even on a TTY
};

using ProgressValues = std::vector<std::pair<std::string, double>>;  // name → value, shown in order

class ProgressBar {
 public:
  // Writes to `out` (not owned; stdout by default); TTY detection via isatty.
  explicit ProgressBar(const ProgressOptions& options, std::FILE* out = stdout);
  ~ProgressBar();  // ends the bar's line

  // `step` optimiser steps are done; `values` shown after the ETA.
  void update(int64_t step, const ProgressValues& values = {});
  // Prints a message on its own line (above the bar on a TTY).
  void message(const std::string& text);
  // Ends the bar's line (idempotent).
  void finish();

  bool is_tty() const { return tty_; }
  // The text of one progress line (for tests and custom displays).
  std::string line(int64_t step, double elapsed_s, const ProgressValues& values) const;

 private:
  ProgressOptions options_;
  std::FILE* out_;
  bool tty_ = false;
  bool bar_drawn_ = false;   // a bar is on screen, without a newline
  double start_s_ = 0.0;
  double last_draw_s_ = -1e300;
};

}  // namespace rlf

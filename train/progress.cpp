#include "train/progress.h"

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <sstream>

#include "util/clock.h"
#include "util/error.h"

namespace rlf {

namespace {


}  // namespace

std::string format_duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "--:--";
  const int64_t s = static_cast<int64_t>(std::llround(seconds));
  char buf[32];
  if (s >= 3600) {
    std::snprintf(buf, sizeof buf, "%lld:%02lld:%02lld", static_cast<long long>(s / 3600),
                  static_cast<long long>(s / 60 % 60), static_cast<long long>(s % 60));
  } else {
    std::snprintf(buf, sizeof buf, "%02lld:%02lld", static_cast<long long>(s / 60), static_cast<long long>(s % 60));
  }
  return buf;
}

std::string format_value(double v) {
  std::ostringstream out;
  out.precision(4);
  out << v;
  return out.str();
}

ProgressBar::ProgressBar(const ProgressOptions& options, std::FILE* out)
    : options_(options), out_(out), start_s_(now_seconds()) {
  check(out_ != nullptr, "progress: no output stream");
  check(options_.total_steps >= 0, "progress.total_steps = ", options_.total_steps, ": must be >= 0 (0 = unknown)");
  check(options_.plain_every >= 1, "progress.plain_every = ", options_.plain_every, ": must be >= 1");
  tty_ = !options_.force_plain && ::isatty(::fileno(out_)) == 1;
}

ProgressBar::~ProgressBar() { finish(); }

std::string ProgressBar::line(int64_t step, double elapsed_s, const ProgressValues& values) const {
  const int64_t total = options_.total_steps;
  const int64_t done_here = step - options_.start_step;
  const double per_step = done_here > 0 ? elapsed_s / static_cast<double>(done_here) : NAN;
  const double eta = total > 0 && done_here > 0 ? per_step * static_cast<double>(std::max<int64_t>(0, total - step)) : NAN;
  const double frac = total > 0 ? std::min(1.0, static_cast<double>(step) / static_cast<double>(total)) : 0.0;
  std::ostringstream out;
  out << options_.label;
  if (tty_) {
    if (total > 0) {
      const int filled = static_cast<int>(std::floor(frac * options_.bar_width));
      out << " ";
      for (int i = 0; i < options_.bar_width; ++i) out << (i < filled ? "\u2588" : "\u2591");
      out << " " << step << "/" << total << " " << static_cast<int>(std::floor(frac * 100)) << "%";
    } else {
      out << " step " << step;
    }
    out << " " << format_duration(elapsed_s) << "<" << format_duration(eta);
    if (std::isfinite(per_step)) out << " " << format_value(per_step) << " s/step";
  } else {
    out << " step " << step;
    if (total > 0) out << "/" << total << " (" << static_cast<int>(std::floor(frac * 100)) << "%)";
    out << " elapsed " << format_duration(elapsed_s);
    if (total > 0) out << " eta " << format_duration(eta);
  }
  for (const auto& [name, v] : values) out << " " << name << "=" << format_value(v);
  return out.str();
}

void ProgressBar::update(int64_t step, const ProgressValues& values) {
  const double now = now_seconds();
  const bool last = options_.total_steps > 0 && step >= options_.total_steps;
  if (tty_) {
    if (!last && now - last_draw_s_ < options_.min_redraw_s) return;
    std::fprintf(out_, "\r\033[2K%s", line(step, now - start_s_, values).c_str());
    bar_drawn_ = true;
  } else {
    if (!last && step % options_.plain_every != 0) return;
    std::fprintf(out_, "%s\n", line(step, now - start_s_, values).c_str());
  }
  last_draw_s_ = now;
  std::fflush(out_);
}

void ProgressBar::message(const std::string& text) {
  if (tty_ && bar_drawn_) {
    std::fprintf(out_, "\r\033[2K%s\n", text.c_str());
    bar_drawn_ = false;
    last_draw_s_ = -1e300;  // redraw the bar at the next update
  } else {
    std::fprintf(out_, "%s\n", text.c_str());
  }
  std::fflush(out_);
}

void ProgressBar::finish() {
  if (tty_ && bar_drawn_) {
    std::fprintf(out_, "\n");
    std::fflush(out_);
  }
  bar_drawn_ = false;
}

}  // namespace rlf

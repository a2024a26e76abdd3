#include "train/plot.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <sstream>

#include "train/metrics.h"
#include "util/error.h"
#include "util/fs.h"

namespace rlf {

namespace {

std::string escape_html(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string num(double v) {
  std::ostringstream out;
  out.precision(4);
  out << v;
  return out.str();
}

std::string px(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

// About `n` round tick values covering [lo, hi] (1, 2 or 5 times a power of ten apart).
std::vector<double> nice_ticks(double lo, double hi, int n) {
  if (!(hi > lo)) return {lo};
  const double raw = (hi - lo) / n;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  const double r = raw / mag;
  const double step = (r < 1.5 ? 1 : r < 3.5 ? 2 : r < 7.5 ? 5 : 10) * mag;
  std::vector<double> ticks;
  for (double t = std::ceil(lo / step) * step; t <= hi + step * 1e-9; t += step) {
    ticks.push_back(std::abs(t) < step * 1e-9 ? 0.0 : t);
  }
  return ticks;
}

struct Series {
  std::vector<double> x, y;
};

std::string polyline(const Series& s, double x0, double x1, double y0, double y1, double left, double top,
                     double w, double h, const char* style) {
  std::string pts;
  for (size_t i = 0; i < s.x.size(); ++i) {
    const double px_x = left + (x1 > x0 ? (s.x[i] - x0) / (x1 - x0) : 0.5) * w;
    const double px_y = top + h - (y1 > y0 ? (s.y[i] - y0) / (y1 - y0) : 0.5) * h;
    if (!pts.empty()) pts += ' ';
    pts += px(px_x) + "," + px(px_y);
  }
  return "<polyline fill=\"none\" " + std::string(style) + " points=\"" + pts + "\"/>\n";
}

std::string chart(const std::string& key, const Series& s, const PlotOptions& o) {
  const double left = 64, right = 16, top = 28, bottom = 36;
  const double w = o.width - left - right, h = o.height - top - bottom;
  double x0 = *std::min_element(s.x.begin(), s.x.end()), x1 = *std::max_element(s.x.begin(), s.x.end());
  double y0 = *std::min_element(s.y.begin(), s.y.end()), y1 = *std::max_element(s.y.begin(), s.y.end());
  if (y1 == y0) {
    const double pad = y0 == 0 ? 1.0 : std::abs(y0) * 0.1;
    y0 -= pad;
    y1 += pad;
  }
  std::ostringstream svg;
  svg << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << o.width << "\" height=\"" << o.height
      << "\" viewBox=\"0 0 " << o.width << " " << o.height << "\" font-family=\"sans-serif\" font-size=\"11\">\n";
  svg << "<title>" << escape_html(key) << "</title>\n";
  svg << "<rect x=\"0\" y=\"0\" width=\"" << o.width << "\" height=\"" << o.height << "\" fill=\"white\"/>\n";
  svg << "<text x=\"" << left << "\" y=\"18\" font-size=\"13\" font-weight=\"bold\">" << escape_html(key)
      << "</text>\n";
  svg << "<text x=\"" << o.width - right << "\" y=\"18\" text-anchor=\"end\">last " << num(s.y.back()) << ", min "
      << num(*std::min_element(s.y.begin(), s.y.end())) << ", max " << num(*std::max_element(s.y.begin(), s.y.end()))
      << "</text>\n";
  for (double t : nice_ticks(y0, y1, 4)) {
    const double y = top + h - (t - y0) / (y1 - y0) * h;
    svg << "<line x1=\"" << left << "\" y1=\"" << px(y) << "\" x2=\"" << left + w << "\" y2=\"" << px(y)
        << "\" stroke=\"#e5e5e5\"/>\n";
    svg << "<text x=\"" << left - 6 << "\" y=\"" << px(y + 4) << "\" text-anchor=\"end\">" << num(t) << "</text>\n";
  }
  for (double t : nice_ticks(x0, x1, 6)) {
    const double x = left + (x1 > x0 ? (t - x0) / (x1 - x0) : 0.5) * w;
    svg << "<line x1=\"" << px(x) << "\" y1=\"" << top + h << "\" x2=\"" << px(x) << "\" y2=\"" << top + h + 4
        << "\" stroke=\"#444\"/>\n";
    svg << "<text x=\"" << px(x) << "\" y=\"" << top + h + 16 << "\" text-anchor=\"middle\">" << num(t)
        << "</text>\n";
  }
  svg << "<rect x=\"" << left << "\" y=\"" << top << "\" width=\"" << w << "\" height=\"" << h
      << "\" fill=\"none\" stroke=\"#444\"/>\n";
  svg << "<text x=\"" << left + w / 2 << "\" y=\"" << o.height - 4 << "\" text-anchor=\"middle\">"
      << escape_html(o.x_key) << "</text>\n";
  if (o.smoothing > 0) {
    Series ema = s;
    for (size_t i = 1; i < ema.y.size(); ++i) ema.y[i] = o.smoothing * ema.y[i - 1] + (1 - o.smoothing) * s.y[i];
    svg << polyline(s, x0, x1, y0, y1, left, top, w, h, "stroke=\"#9ecae1\" stroke-width=\"1\"");
    svg << polyline(ema, x0, x1, y0, y1, left, top, w, h, "stroke=\"#08519c\" stroke-width=\"2\"");
  } else {
    svg << polyline(s, x0, x1, y0, y1, left, top, w, h, "stroke=\"#08519c\" stroke-width=\"1.5\"");
  }
  if (s.x.size() == 1) {
    const double cx = left + w / 2, cy = top + h - (s.y[0] - y0) / (y1 - y0) * h;
    svg << "<circle cx=\"" << px(cx) << "\" cy=\"" << px(cy) << "\" r=\"3\" fill=\"#08519c\"/>\n";
  }
  svg << "</svg>\n";
  return svg.str();
}

}  // namespace

std::string render_metrics_html(const std::vector<Json>& records, const std::vector<std::string>& keys,
                                const PlotOptions& options) {
  check(options.smoothing >= 0 && options.smoothing < 1, "plot.smoothing = ", options.smoothing,
        ": must be in [0, 1)");
  check(options.width >= 200 && options.height >= 120, "plot: chart size ", options.width, "x", options.height,
        " is too small (at least 200x120)");
  std::vector<std::string> present;
  std::set<std::string> seen;
  for (const Json& r : records) {
    for (const auto& [k, v] : r.items()) {
      if (k != options.x_key && k != "time" && v.is_number() && seen.insert(k).second) present.push_back(k);
    }
  }
  const std::vector<std::string>& names = keys.empty() ? present : keys;
  check(!names.empty(), "plot: the metrics have no numeric values to plot");
  std::ostringstream html;
  html << "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>" << escape_html(options.title)
       << "</title>\n<style>body{font-family:sans-serif;margin:16px;background:#fafafa}"
          "svg{margin:6px;border:1px solid #ddd}</style></head>\n<body>\n<h1>"
       << escape_html(options.title) << "</h1>\n<p>" << records.size() << " records</p>\n";
  for (const std::string& key : names) {
    Series s;
    for (const Json& r : records) {
      auto xi = r.find(options.x_key), yi = r.find(key);
      if (xi == r.end() || yi == r.end() || !xi->is_number() || !yi->is_number()) continue;
      const double x = xi->get<double>(), y = yi->get<double>();
      if (!std::isfinite(x) || !std::isfinite(y)) continue;
      s.x.push_back(x);
      s.y.push_back(y);
    }
    if (s.x.empty()) {
      std::string valid;
      for (const auto& p : present) valid += (valid.empty() ? "" : ", ") + p;
      fail("plot: no record has a numeric '", key, "' with a numeric '", options.x_key, "' (metrics present: ",
           valid.empty() ? "none" : valid, ")");
    }
    html << chart(key, s, options);
  }
  html << "</body></html>\n";
  return html.str();
}

void write_metrics_plot(const std::filesystem::path& metrics_jsonl, const std::filesystem::path& out_html,
                        const std::vector<std::string>& keys, const PlotOptions& options) {
  with_context("plotting '" + metrics_jsonl.string() + "'", [&] {
    write_file_atomic(out_html, render_metrics_html(read_jsonl(metrics_jsonl), keys, options));
  });
}

}  // namespace rlf

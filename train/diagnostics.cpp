#include "train/diagnostics.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>
#include <string>

namespace rlf {

DiagnosticSums diagnostic_sums(const std::vector<ScoredGroup>& groups, size_t accuracy_component) {
  DiagnosticSums s{};
  for (const ScoredGroup& g : groups) {
    std::vector<double> rewards;
    std::set<std::string> texts;
    size_t n_rollout = 0;
    bool judged = false, correct = false;
    for (size_t i = 0; i < g.group.episodes.size(); ++i) {
      const Episode& e = g.group.episodes[i];
      if (e.source != EpisodeSource::Rollout) continue;
      ++n_rollout;
      texts.insert(e.transcript());
      if (accuracy_component < g.scores.results.size()) {
        judged |= g.scores.results[accuracy_component][i].score.has_value();
        correct |= is_correct(g, accuracy_component, i);
      }
      if (!g.totals[i]) continue;
      const double x = *g.totals[i], y = static_cast<double>(e.n_completion());
      rewards.push_back(x);
      s.n += 1, s.x += x, s.y += y, s.xy += x * y, s.xx += x * x, s.yy += y * y;
    }
    if (rewards.size() >= 2) {
      double mean = 0, var = 0;
      for (double r : rewards) mean += r;
      mean /= static_cast<double>(rewards.size());
      for (double r : rewards) var += (r - mean) * (r - mean);
      var /= static_cast<double>(rewards.size());
      s.groups += 1;
      s.std_sum += std::sqrt(var);
      bool equal = true;
      for (double r : rewards) equal &= r == rewards.front();
      s.zero_var += equal;
    }
    if (judged) s.judged += 1, s.any_correct += correct;
    if (n_rollout > 0) {
      s.distinct += static_cast<double>(texts.size()) / static_cast<double>(n_rollout);
      s.with_episodes += 1;
    }
  }
  return s;
}

GoldRewardWatch::GoldRewardWatch(std::string gold_name, int64_t window, double tolerance)
    : gold_name_(std::move(gold_name)), window_(static_cast<size_t>(std::max<int64_t>(1, window))), tolerance_(tolerance) {}

std::optional<std::string> GoldRewardWatch::add(int64_t step, double proxy, double gold) {
  history_.emplace_back(proxy, gold);
  if (history_.size() > 2 * window_) history_.pop_front();
  if (history_.size() < 2 * window_) return std::nullopt;
  if (last_warning_ >= 0 && step - last_warning_ < static_cast<int64_t>(window_)) return std::nullopt;
  double p0 = 0, p1 = 0, g0 = 0, g1 = 0;
  for (size_t i = 0; i < window_; ++i) p0 += history_[i].first, g0 += history_[i].second;
  for (size_t i = window_; i < 2 * window_; ++i) p1 += history_[i].first, g1 += history_[i].second;
  const double n = static_cast<double>(window_);
  p0 /= n, p1 /= n, g0 /= n, g1 /= n;
  if (!(p1 - p0 > tolerance_ && g0 - g1 > tolerance_)) return std::nullopt;
  last_warning_ = step;
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "possible reward over-optimisation: over the last %zu steps the trained reward's mean rose %.3f -> %.3f "
                "while the gold reward '%s' fell %.3f -> %.3f",
                2 * window_, p0, p1, gold_name_.c_str(), g0, g1);
  return std::string(buf);
}

Json diagnostics_from_sums(const DiagnosticSums& s) {
  Json m = Json::object();
  const double n = s.n;
  if (n >= 2) {
    const double cov = s.xy / n - (s.x / n) * (s.y / n);
    const double vx = s.xx / n - (s.x / n) * (s.x / n), vy = s.yy / n - (s.y / n) * (s.y / n);
    // Constant rewards or constant lengths: no correlation to speak of (0, not NaN).
    m["diag/reward_length_corr"] = vx > 1e-12 && vy > 1e-12 ? cov / std::sqrt(vx * vy) : 0.0;
  }
  if (s.groups > 0) {
    m["diag/group_reward_std"] = s.std_sum / s.groups;
    m["diag/zero_variance_frac"] = s.zero_var / s.groups;
  }
  if (s.judged > 0) m["diag/pass_at_group"] = s.any_correct / s.judged;
  if (s.with_episodes > 0) m["diag/distinct_frac"] = s.distinct / s.with_episodes;
  return m;
}

}  // namespace rlf

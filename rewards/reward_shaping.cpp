// Per-component clip, centre, gate and Lagrangian constraints; see reward_shaping.h.
#include "rewards/reward_shaping.h"

#include <algorithm>
#include <cmath>

#include "util/error.h"

namespace rlf {

bool ComponentShaping::identity() const {
  return !std::isfinite(clip_low) && !std::isfinite(clip_high) && !center && gate_index < 0;
}

ComponentShaping read_component_shaping(const Json& table, const std::string& where) {
  ComponentShaping s;
  auto number = [&](const char* key, double fallback) {
    auto it = table.find(key);
    if (it == table.end()) return fallback;
    check(it->is_number() && std::isfinite(it->get<double>()), where, ": '", key, "' must be a finite number, got ",
          it->dump());
    return it->get<double>();
  };
  if (auto it = table.find("clip"); it != table.end()) {
    check(it->is_array() && it->size() == 2 && (*it)[0].is_number() && (*it)[1].is_number(), where,
          ": 'clip' must be [low, high] (two numbers), got ", it->dump());
    s.clip_low = (*it)[0].get<double>();
    s.clip_high = (*it)[1].get<double>();
    check(!std::isnan(s.clip_low) && !std::isnan(s.clip_high) && s.clip_low <= s.clip_high, where,
          ": 'clip' = ", it->dump(), " needs low <= high");
  }
  if (auto it = table.find("center"); it != table.end()) {
    check(it->is_string() && (it->get<std::string>() == "group" || it->get<std::string>() == "none"), where,
          ": 'center' must be \"group\" (subtract the group's mean) or \"none\", got ", it->dump());
    s.center = it->get<std::string>() == "group";
  }
  if (auto it = table.find("gate"); it != table.end()) {
    check(it->is_string() && !it->get<std::string>().empty(), where,
          ": 'gate' must name another reward component, got ", it->dump());
    s.gate = it->get<std::string>();
  }
  s.gate_min = number("gate_min", s.gate_min);
  check(s.gate.empty() ? !table.contains("gate_min") : true, where, ": 'gate_min' without 'gate' (the component "
        "whose score must reach it)");
  if (table.contains("constraint_max")) s.constraint_max = number("constraint_max", 0.0);
  s.lambda_init = number("lambda_init", s.lambda_init);
  s.lambda_lr = number("lambda_lr", s.lambda_lr);
  if (!s.constraint_max) {
    for (const char* key : {"lambda_init", "lambda_lr"})
      check(!table.contains(key), where, ": '", key, "' without 'constraint_max' (the cost's threshold)");
  } else {
    check(s.lambda_init >= 0, where, ": 'lambda_init' must be >= 0 (got ", s.lambda_init, ")");
    check(s.lambda_lr > 0, where, ": 'lambda_lr' must be > 0 (got ", s.lambda_lr, ")");
    check(!table.contains("weight"), where, ": a constrained component's weight is -lambda (set by dual ascent): "
          "drop 'weight' or 'constraint_max'");
  }
  return s;
}

bool gate_open(const ComponentShaping& s, const std::optional<double>& gate_score) {
  return s.gate_index < 0 || (gate_score && *gate_score >= s.gate_min);
}

bool passes_gate(const ComponentMatrix& raw, const std::vector<ComponentShaping>& shaping, size_t i, size_t c) {
  const int64_t g = shaping[c].gate_index;
  return gate_open(shaping[c], g < 0 ? std::nullopt : raw[i][static_cast<size_t>(g)]);
}

ComponentMatrix apply_shaping(const ComponentMatrix& raw, const std::vector<ComponentShaping>& shaping) {
  ComponentMatrix out = raw;
  if (raw.empty()) return out;
  check(raw[0].size() == shaping.size(), "apply_shaping: ", shaping.size(), " shapings for ", raw[0].size(),
        " components");
  for (size_t c = 0; c < shaping.size(); ++c) {
    const ComponentShaping& s = shaping[c];
    if (s.identity()) continue;
    double sum = 0;
    int64_t n = 0;
    for (auto& row : out) {
      if (!row[c]) continue;
      row[c] = std::clamp(*row[c], s.clip_low, s.clip_high);
      sum += *row[c];
      ++n;
    }
    if (s.center && n > 0)
      for (auto& row : out)
        if (row[c]) row[c] = *row[c] - sum / static_cast<double>(n);
    for (size_t i = 0; i < out.size(); ++i)
      if (out[i][c] && !passes_gate(raw, shaping, i, c)) out[i][c] = 0.0;
  }
  return out;
}

void standardize_in_group(std::vector<RewardResult>& results, double eps) {
  double sum = 0, n = 0;
  for (const RewardResult& r : results)
    if (r.score) sum += *r.score, n += 1;
  if (n == 0) return;
  const double mean = sum / n;
  double sq = 0;
  for (const RewardResult& r : results)
    if (r.score) sq += (*r.score - mean) * (*r.score - mean);
  const double sd = std::sqrt(sq / n);
  for (RewardResult& r : results)
    if (r.score) r.score = (*r.score - mean) / (sd + eps);
}

double dual_ascent(double lambda, double mean_cost, double max, double lr) {
  return std::max(0.0, lambda + lr * (mean_cost - max));
}

}  // namespace rlf

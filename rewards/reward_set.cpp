// Scores components in order; non-finite scores become missing; stats over a step.
#include "rewards/reward_set.h"

#include <algorithm>
#include <cmath>
#include <sstream>

namespace rlf {

ComponentMatrix GroupScores::matrix() const {
  ComponentMatrix m(n_samples(), std::vector<std::optional<double>>(results.size()));
  for (size_t c = 0; c < results.size(); ++c) {
    for (size_t i = 0; i < results[c].size(); ++i) m[i][c] = results[c][i].score;
  }
  return m;
}

ComponentMatrix GroupScores::shaped_matrix() const {
  if (shaping.empty()) return matrix();
  return apply_shaping(matrix(), shaping);
}

bool GroupScores::counts(size_t c, size_t sample) const {
  if (shaping.empty() || shaping[c].gate_index < 0) return true;
  return gate_open(shaping[c], results[static_cast<size_t>(shaping[c].gate_index)][sample].score);
}

std::vector<std::optional<double>> GroupScores::totals(RewardAggregation mode) const {
  return aggregate_rewards(shaped_matrix(), weights, mode);
}

std::string GroupScores::describe(size_t sample) const {
  std::ostringstream out;
  for (size_t c = 0; c < results.size(); ++c) {
    const RewardResult& r = results[c].at(sample);
    if (c) out << "; ";
    out << names[c] << "=";
    if (r.score) {
      out << *r.score;
      if (!r.explanation.empty()) out << " (" << r.explanation << ")";
    } else {
      out << "missing (" << r.missing_reason << ")";
    }
  }
  return out.str();
}

void RewardSet::add(std::string name, double weight, std::unique_ptr<Reward> reward, ComponentShaping shaping) {
  check(!name.empty(), "reward set: a component has an empty name");
  check(reward != nullptr, "reward set: component '", name, "' has no reward");
  check(std::isfinite(weight), "reward set: component '", name, "' has a non-finite weight ", weight);
  for (const RewardComponent& c : components_) {
    check(c.name != name, "reward set: two rewards are named '", name,
          "'; give one of them a different name = \"...\"");
  }
  double lambda = 0.0;
  if (shaping.constraint_max) {
    lambda = shaping.lambda_init;
    weight = -lambda;
  }
  components_.push_back({.name = std::move(name),
                         .weight = weight,
                         .reward = std::move(reward),
                         .shaping = std::move(shaping),
                         .lambda = lambda});
}

size_t RewardSet::index_of(const std::string& name, const std::string& key) const {
  std::string names;
  for (size_t c = 0; c < components_.size(); ++c) {
    if (components_[c].name == name) return c;
    names += (names.empty() ? "" : ", ") + components_[c].name;
  }
  fail(key, " = \"", name, "\" names no [[reward]] component (components: ",
       names.empty() ? "none configured" : names, ")");
}

void RewardSet::resolve_gates() {
  for (size_t k = 0; k < components_.size(); ++k) {
    RewardComponent& c = components_[k];
    if (c.shaping.gate.empty()) continue;
    const size_t gate = index_of(c.shaping.gate, str("reward '", c.name, "': gate"));
    check(gate != k, "reward '", c.name, "': gate names the component itself");
    c.shaping.gate_index = static_cast<int64_t>(gate);
  }
}

void RewardSet::update_constraints(const std::vector<std::optional<double>>& means) {
  check(means.size() == components_.size(), "update_constraints: ", means.size(), " means for ", components_.size(),
        " components");
  for (size_t k = 0; k < components_.size(); ++k) {
    RewardComponent& c = components_[k];
    if (!c.shaping.constraint_max || !means[k]) continue;
    c.lambda = dual_ascent(c.lambda, *means[k], *c.shaping.constraint_max, c.shaping.lambda_lr);
    c.weight = -c.lambda;
  }
}

bool RewardSet::has_constraints() const {
  return std::any_of(components_.begin(), components_.end(),
                     [](const RewardComponent& c) { return c.shaping.constraint_max.has_value(); });
}

Json RewardSet::constraint_state() const {
  Json j = Json::object();
  for (const RewardComponent& c : components_)
    if (c.shaping.constraint_max) j[c.name] = c.lambda;
  return j;
}

void RewardSet::restore_constraints(const Json& state, const std::string& where) {
  for (RewardComponent& c : components_) {
    if (!c.shaping.constraint_max) continue;
    check(state.is_object() && state.contains(c.name) && state.at(c.name).is_number(), where,
          ": no Lagrange multiplier for the constrained reward '", c.name, "'");
    c.lambda = state.at(c.name).get<double>();
    check(std::isfinite(c.lambda) && c.lambda >= 0, where, ": the multiplier of '", c.name, "' is ", c.lambda);
    c.weight = -c.lambda;
  }
}

GroupScores RewardSet::score(const RewardGroup& group) {
  GroupScores out;
  const bool shaped = std::any_of(components_.begin(), components_.end(),
                                  [](const RewardComponent& c) { return !c.shaping.identity(); });
  for (RewardComponent& c : components_) {
    out.names.push_back(c.name);
    out.weights.push_back(c.weight);
    if (shaped) out.shaping.push_back(c.shaping);
    std::vector<RewardResult> results = with_context(str("reward '", c.name, "'"), [&] {
      return c.reward->score(group);
    });
    check(results.size() == group.samples.size(), "reward '", c.name, "' returned ", results.size(),
          " results for ", group.samples.size(), " completions");
    for (RewardResult& r : results) {
      if (r.score && !std::isfinite(*r.score)) {  // a NaN would poison the group's advantages
        r.missing_reason = str("non-finite score ", *r.score);
        r.score.reset();
      }
      if (!r.score && r.missing_reason.empty()) r.missing_reason = "no score (no reason given)";
    }
    out.results.push_back(std::move(results));
  }
  return out;
}

void RewardSet::check_record(const Json& record, const std::string& reference, const std::string& where) const {
  for (const RewardComponent& c : components_) c.reward->check_record(record, reference, where);
}

std::vector<ComponentStats> component_stats(const std::vector<GroupScores>& groups) {
  std::vector<ComponentStats> stats;
  if (groups.empty()) return stats;
  for (size_t c = 0; c < groups[0].names.size(); ++c) {
    ComponentStats s;
    s.name = groups[0].names[c];
    std::vector<double> values;
    for (const GroupScores& g : groups) {
      check(c < g.results.size() && g.names[c] == s.name, "component_stats: groups come from different reward sets");
      for (const RewardResult& r : g.results[c]) {
        if (r.score) {
          values.push_back(*r.score);
        } else {
          ++s.n_missing;
        }
      }
    }
    s.n_scored = int64_t(values.size());
    if (!values.empty()) {
      double sum = 0.0;
      for (double v : values) sum += v;
      s.mean = sum / double(values.size());
      double sq = 0.0;
      for (double v : values) sq += (v - s.mean) * (v - s.mean);
      s.std = values.size() >= 2 ? std::sqrt(sq / double(values.size() - 1)) : 0.0;
    }
    stats.push_back(s);
  }
  return stats;
}

}  // namespace rlf

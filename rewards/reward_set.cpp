// Scores components in order; non-finite scores become missing; stats over a step.
#include "rewards/reward_set.h"

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

std::vector<std::optional<double>> GroupScores::totals(RewardAggregation mode) const {
  return aggregate_rewards(matrix(), weights, mode);
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

void RewardSet::add(std::string name, double weight, std::unique_ptr<Reward> reward) {
  check(!name.empty(), "reward set: a component has an empty name");
  check(reward != nullptr, "reward set: component '", name, "' has no reward");
  check(std::isfinite(weight), "reward set: component '", name, "' has a non-finite weight ", weight);
  for (const RewardComponent& c : components_) {
    check(c.name != name, "reward set: two rewards are named '", name,
          "'; give one of them a different name = \"...\"");
  }
  components_.push_back({std::move(name), weight, std::move(reward)});
}

GroupScores RewardSet::score(const RewardGroup& group) {
  GroupScores out;
  for (RewardComponent& c : components_) {
    out.names.push_back(c.name);
    out.weights.push_back(c.weight);
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

// A set of named, weighted reward components scored together. Scoring a
// group returns every component's result for every completion (score or
// missing, explanation), so each component can be logged on its own; the
// per-sample totals come from aggregate_rewards (reward_aggregation.h).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "rewards/reward.h"
#include "rewards/reward_aggregation.h"
#include "rewards/reward_shaping.h"
#include "util/json_util.h"

namespace rlf {

struct RewardComponent {
  std::string name;                // unique within the set; used in logs ("correct", "format")
  double weight = 1.0;             // multiplies the component in the total (0 = logged only; a constraint: -lambda)
  std::unique_ptr<Reward> reward;
  ComponentShaping shaping;        // clip, centre, gate, constraint (reward_shaping.h)
  double lambda = 0.0;             // a constrained component's multiplier (weight = -lambda)
};

// The results of all components for one group.
struct GroupScores {
  std::vector<std::string> names;                  // [C] component names
  std::vector<double> weights;                     // [C]
  std::vector<std::vector<RewardResult>> results;  // [C][G] results[c][i]: component c, sample i
  std::vector<ComponentShaping> shaping;           // [C] (empty = none)

  size_t n_samples() const { return results.empty() ? 0 : results[0].size(); }
  // scores[i][c] as the components scored them (logged).
  ComponentMatrix matrix() const;
  // After each component's clip, centre and gate: the input of aggregate_rewards.
  ComponentMatrix shaped_matrix() const;
  // Whether component c counts for sample i (its gate passed; always without one):
  // a gated-off component's per-token rewards count 0 too.
  bool counts(size_t c, size_t sample) const;
  // The per-sample totals of this group (of the shaped scores).
  std::vector<std::optional<double>> totals(RewardAggregation mode) const;
  // One line per sample for logs and critiques:
  // "correct=1 (expected 42, got 42); format=missing (regex failed...)".
  std::string describe(size_t sample) const;
  // Whether component c scored sample i correct (is_correct at kCorrectThreshold).
  bool correct(size_t c, size_t sample) const { return is_correct(results[c][sample].score); }
};

class RewardSet {
 public:
  // Adds a component; throws rlf::Error for a duplicate or empty name or a
  // non-finite weight. A constrained component (shaping.constraint_max) starts
  // with weight -lambda_init, whatever `weight` says.
  void add(std::string name, double weight, std::unique_ptr<Reward> reward, ComponentShaping shaping = {});
  // Resolves gates to component indices; an error names a gate that is not a
  // component of the set, or the component itself.
  void resolve_gates();

  size_t size() const { return components_.size(); }
  // The index of the component named `name`; throws rlf::Error naming `key`
  // (the option that named it, e.g. "algorithm.gold_reward") and the
  // components there are. Also for an empty set.
  size_t index_of(const std::string& name, const std::string& key) const;
  bool empty() const { return components_.empty(); }
  const std::vector<RewardComponent>& components() const { return components_; }

  // Scores the group with every component, in order. An rlf::Error from a
  // component (misuse, e.g. a record without the field it needs) is rethrown
  // with the component's name; a component returning the wrong number of
  // results is an error too.
  GroupScores score(const RewardGroup& group);

  // Lagrangian constraints: after a step, each constrained component's
  // multiplier takes one dual-ascent step on its mean score over the step
  // (`means[c]`, unset = nothing scored: unchanged); its weight becomes -lambda.
  void update_constraints(const std::vector<std::optional<double>>& means);
  bool has_constraints() const;
  // {name: lambda} of the constrained components (checkpoints), and back.
  Json constraint_state() const;
  void restore_constraints(const Json& state, const std::string& where);

  // Runs every component's check_record (at start-up, per dataset record).
  void check_record(const Json& record, const std::string& reference, const std::string& where) const;

 private:
  std::vector<RewardComponent> components_;
};

// Mean and sample standard deviation of one component over a step's groups,
// over the samples it scored (like TRL's nanmean/nanstd).
struct ComponentStats {
  std::string name;
  double mean = 0.0;       // 0 when nothing was scored
  double std = 0.0;        // sample std (n - 1); 0 when fewer than two scores
  int64_t n_scored = 0;
  int64_t n_missing = 0;
};

// One entry per component (all groups must come from the same set).
std::vector<ComponentStats> component_stats(const std::vector<GroupScores>& groups);

}  // namespace rlf

// Combining reward components beyond a weighted sum (docs/rewards.md,
// "Combining rewards"): per-component bounding, centring and gating, and
// Lagrangian constraints. Each is a key of the component's [[reward]] table:
//
//   clip = [lo, hi]       bound the component's score to [lo, hi]
//   center = "group"      subtract the mean of the component's (clipped)
//                         scores within the group (the samples it scored)
//   gate = "NAME"         the component counts only for samples whose
//   gate_min = 0.5        component NAME scored >= gate_min (else its score
//                         and its per-token rewards count 0): step or
//                         format rewards accrue only when the outcome passes
//   constraint_max = d    a cost kept under d by dual ascent (Safe RLHF, Dai
//   lambda_init = 1       et al. 2023; constrained RLHF, Moskovitz et al.
//   lambda_lr = 0.05      2023): its weight is -lambda, and after each step
//                         lambda <- max(0, lambda + lr (mean cost - d))
//
// Order, per sample and component: clip, then centre, then gate. A missing
// score stays missing (gating never invents a score). A weight vector over
// the components (their `weight` keys) is a direction (Directional
// Preference Alignment) as it stands.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "rewards/reward.h"
#include "rewards/reward_aggregation.h"
#include "util/json_util.h"

namespace rlf {

struct ComponentShaping {
  double clip_low = -std::numeric_limits<double>::infinity();   // clip[0]
  double clip_high = std::numeric_limits<double>::infinity();   // clip[1]
  bool center = false;                 // center = "group"
  std::string gate;                    // the gating component's name ("" = none)
  double gate_min = 0.5;               // its score must be >= this
  int64_t gate_index = -1;             // resolved by the reward set
  std::optional<double> constraint_max;  // a Lagrangian constraint on this cost
  double lambda_init = 1.0;            // the multiplier's start (>= 0)
  double lambda_lr = 0.05;             // its dual-ascent step (> 0)

  bool identity() const;               // no clip, centre or gate
};

// Reads the shaping keys of one [[reward]] table (absent keys: defaults).
// Throws rlf::Error naming `where` and the key.
ComponentShaping read_component_shaping(const Json& table, const std::string& where);

// Whether a component with shaping `s` counts, given its gate's raw score
// (read only when s has a gate): the gate scored >= gate_min.
bool gate_open(const ComponentShaping& s, const std::optional<double>& gate_score);
// The same for component c of sample i of a group's raw scores.
bool passes_gate(const ComponentMatrix& raw, const std::vector<ComponentShaping>& shaping, size_t i, size_t c);

// The shaped scores of one group (clip, centre, gate), raw[i][c] -> out[i][c].
ComponentMatrix apply_shaping(const ComponentMatrix& raw, const std::vector<ComponentShaping>& shaping);

// Standardises the present scores of one group in place (a reward's own
// `normalize = "group"`): s <- (s - mean) / (std + eps), population std over
// the present scores; missing ones stay missing.
void standardize_in_group(std::vector<RewardResult>& results, double eps = 1e-6);

// One step of dual ascent: max(0, lambda + lr (mean_cost - max)).
double dual_ascent(double lambda, double mean_cost, double max, double lr);

}  // namespace rlf

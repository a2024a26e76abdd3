// PromptPool: per-prompt statistics that decide which training prompts a run
// samples ([curation], docs/curation.md). Two recipes share it:
//
// Difficulty pool (curation.difficulty_pool): after prompt i's group is
// scored at step s (0-based) with c of j episodes judged correct (j > 0),
//   p_i = c / j;  p_i <= pool_pass_low or p_i >= pool_pass_high
//   -> i is parked until step s + 1 + pool_revisit_after,
// else it is active. (With the defaults 0 and 1: prompts never or always
// solved are skipped, and revisited pool_revisit_after steps later.)
//
// Unreliable rewards (curation.reward_disagreement > 0): after the group is
// scored, with t the mean trained reward and g the mean gold-reward score
// over its episodes (algorithm.gold_reward), |t - g| > reward_disagreement
// is a disagreement; a prompt reaching drop_disagreeing_after of them
// (> 0) is dropped from later sampling for the rest of the run.
//
// Drawing: indices come from the run's DataCursor one at a time; a parked or
// dropped index is skipped (counted) and the next one drawn. After n_items
// skips in a row (every prompt parked or dropped) the next index is taken
// anyway (counted as forced), so a step always has its prompts.
//
// state()/restore() save everything that drawing depends on, so a resumed
// run draws exactly what an uninterrupted one would (the cursor is saved
// beside it). Counts are integers: nothing is rounded through JSON.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "data/data_cursor.h"
#include "util/json_util.h"

namespace rlf {

struct PromptPoolOptions {
  bool difficulty = false;          // curation.difficulty_pool: park prompts by pass rate
  double pass_low = 0.0;            // curation.pool_pass_low: parked when p <= this
  double pass_high = 1.0;           // curation.pool_pass_high: parked when p >= this
  int64_t revisit_after = 10;       // curation.pool_revisit_after: steps a parked prompt waits
  double reward_disagreement = 0.0; // curation.reward_disagreement: |t - g| above this disagrees (0 = off)
  int64_t drop_after = 0;           // curation.drop_disagreeing_after: disagreements that drop a prompt (0 = report only)

  bool enabled() const { return difficulty || reward_disagreement > 0; }
  // Throws rlf::Error naming the curation.* key.
  void validate() const;
};

// What one prompt's group showed at one visit.
struct PromptOutcome {
  int64_t n_correct = 0;             // episodes the accuracy reward judged correct
  int64_t n_judged = 0;              // episodes it judged (0: no pass rate; nothing parks)
  bool reward_checked = false;       // both means exist (reward_disagreement > 0)
  double trained_mean = 0.0;         // t: mean trained reward over the group's episodes
  double gold_mean = 0.0;            // g: mean gold-reward score
};

// Counts of one step's draws (metrics curation/*).
struct PoolDrawStats {
  int64_t n_skipped = 0;  // draws skipped (parked or dropped)
  int64_t n_forced = 0;   // parked or dropped prompts taken because everything was
};

class PromptPool {
 public:
  // `ids`: the training prompts' ids in dataset order (a fingerprint of them is saved).
  PromptPool(const std::vector<std::string>& ids, const PromptPoolOptions& options);

  // The next `n` indices from `cursor` at step `step`, skipping parked and dropped prompts.
  std::vector<size_t> draw(DataCursor& cursor, size_t n, int64_t step, PoolDrawStats& stats) const;

  // Records prompt `index`'s outcome at step `step`; returns true when it is a disagreement.
  bool record(size_t index, const PromptOutcome& outcome, int64_t step);

  bool parked(size_t index, int64_t step) const;  // difficulty: not drawn at `step`
  bool dropped(size_t index) const;               // unreliable reward: never drawn again
  int64_t n_parked(int64_t step) const;
  int64_t n_dropped() const;

  // {"format":"rlf.prompt_pool","version":1,"n_items","fingerprint","prompts":[[index, visits, correct, judged,
  //  parked_until, n_checked, n_disagree, dropped], ...]} (visited prompts only)
  Json state() const;
  // Throws rlf::Error naming `source` when the state is malformed or was saved for other prompts.
  void restore(const Json& state, const std::string& source);

  // The human-readable report (curation/prompt_pool.json): options, counts and every visited prompt.
  Json report(int64_t step) const;

 private:
  struct Entry {
    int64_t visits = 0;
    int64_t n_correct = 0, n_judged = 0;  // at the last visit
    int64_t parked_until = 0;             // first step it may be drawn again
    int64_t n_checked = 0, n_disagree = 0;
    double last_gap = 0.0;                // |t - g| at the last check (report only)
    bool dropped = false;
  };
  std::vector<std::string> ids_;
  std::string fingerprint_;
  PromptPoolOptions options_;
  std::vector<Entry> entries_;
};

}  // namespace rlf

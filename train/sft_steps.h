// SftSteps: where an SFT run's (or an SFT warm start's) episodes come from.
// Each step is the next batch of (prompt, response) pairs from a seeded
// cursor, as episodes: the prompt with loss weight 0, the response plus the
// EOS token with loss weight 1 — or, for multi-turn targets
// (SftExample::turns), each policy turn with weight 1 and each observation
// with weight 0, tokenized stretch by stretch as the rollout engine would see
// them. The trainer trains them with the ce term alone.
#pragma once

#include <cstdint>
#include <vector>

#include "data/data_cursor.h"
#include "data/examples.h"
#include "env/episode.h"
#include "train/reducer.h"
#include "rollout/policy.h"

namespace rlf {

// One SFT example as an episode (group 0, on-policy, old log-probs 0).
// Throws rlf::Error when the policy has no EOS id.
Episode sft_episode(const Policy& policy, const SftExample& example, bool add_special_tokens);

class SftSteps {
 public:
  // Borrows the policy and the examples (which must not be empty). With
  // `one_group` every episode of a batch is in group 0 (the warm start: one
  // optimiser step per batch); otherwise each pair is its own group, so
  // algorithm.mini_batches and epochs split and revisit a batch.
  SftSteps(const Policy& policy, const std::vector<SftExample>& examples, int64_t batch_size, uint64_t seed,
           bool add_special_tokens, bool one_group = true, Shard shard = {});

  std::vector<Episode> next();

  DataCursor& cursor() { return cursor_; }

 private:
  const Policy& policy_;
  const std::vector<SftExample>& examples_;
  bool add_special_;
  bool one_group_;
  Shard shard_;  // data-parallel: this rank keeps its positions of each batch
  DataCursor cursor_;
};

}  // namespace rlf

// The SFT kind of run (trainer.kind = "sft", make_sft_kind in
// train/run_kind.h) and its step source, which an [sft] warm start
// (train/warm_start.h) shares: each step the next batch of SFT pairs
// (train/sft_steps.h sft_episode), trained with the ce term — and, in an SFT
// run, a kl term toward the model as loaded (algorithm.kl_beta > 0) and an
// entropy bonus (loss.entropy_coef).
#pragma once

#include <cstdint>
#include <vector>

#include "train/run_context.h"
#include "train/run_kind_dataset.h"

namespace rlf {

class SftSource {
 public:
  // Borrows r.policy and r.sft_examples (not empty). With `one_group` every
  // episode of a batch is in group 0 (the warm start: one optimiser step per
  // batch); otherwise each pair is its own group, so algorithm.mini_batches
  // and epochs split and revisit a batch. `reference` (optional): the KL
  // reference whose log-probs the episodes carry.
  SftSource(RunContext& r, int64_t batch_size, uint64_t seed, bool one_group, CausalLM reference = nullptr,
            int64_t micro_batch_size = 8);
  // The next batch; metrics: "sft/tokens" (response tokens over the ranks).
  std::vector<Episode> next(Json& metrics);
  DataCursor& cursor() { return source_.cursor(); }

 private:
  Reducer& reducer_;
  DatasetSource source_;
  CausalLM reference_;
  int64_t micro_batch_size_;
};

}  // namespace rlf

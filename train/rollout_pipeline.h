// Asynchronous rollouts with a staleness bound (rollout.max_staleness = K):
// the rollout of later steps overlaps the update of this one, as prime-rl and
// AReaL do by default, on a copy of the weights, so the trainer can change the
// live ones meanwhile.
//
// The schedule is a logical clock, not a race. Batch m (the episodes trainer
// step m trains on) is sampled with the weights W_L(m) the policy had at the
// start of step L(m) = max(m - K, d(m)), where d(m) is the last drain point
// <= m: the run's first step and every checkpoint boundary. At the start of
// step n the pipeline hands over batch n, then launches the batches m in
// (n, n + K] that no drain point in (n, m] holds back, each with a snapshot of
// W_n. Batches are produced one after another on one rollout thread (the
// data cursor, rewards and environment advance in step order), each on its
// own snapshot copied into the rollout model, while the main thread updates
// the live model. So:
//   - a batch is trained at most K steps after the weights that sampled it
//     (its tokens record their version, Episode::policy_version; the trainer
//     treats older tokens as off-policy: the importance ratio against their
//     stored log-probs, clipped, and the off-policy safeguards apply); no
//     episode is ever staler than K, so none needs dropping;
//   - the run is the same whatever the threads' timing (deterministic for a
//     seed), and, since nothing is in flight across a checkpoint boundary, a
//     resumed run is the same as an uninterrupted one, bit for bit;
//   - K = 0 is the synchronous loop (the pipeline is not used).
// Batches launched beyond the run's end (a token budget reached) are
// discarded. Exceptions of the rollout thread surface at take().
// Threads: both threads use LibTorch's intra-op pool as configured (--threads);
// on a CPU they compete for the same cores.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <future>
#include <vector>

#include "env/episode.h"
#include "model/transformer.h"
#include "train/metrics.h"
#include "util/json_util.h"

namespace rlf {

struct RolloutBatch {
  std::vector<Episode> episodes;
  Json metrics = Json::object();          // the step source's metrics for this batch
  std::vector<SampleRecord> samples;      // its samples log records
  int64_t sampled_at = 0;                 // L(m): the trainer step whose starting weights sampled it
};

class RolloutPipeline {
 public:
  // Produces batch `step` with the rollout model; tokens record `version`.
  using Produce = std::function<RolloutBatch(int64_t step, int32_t version)>;

  // `live`: the trained model (read when launching, from the main thread);
  // `rollout`: a model of the same shapes that `produce` samples with (only
  // the rollout thread touches it); `depth` K >= 1; `is_drain(step)`: nothing
  // may be in flight when step starts; batches are launched for steps < end.
  RolloutPipeline(CausalLM live, CausalLM rollout, int64_t depth, std::function<bool(int64_t)> is_drain, int64_t end,
                  Produce produce);
  ~RolloutPipeline();  // waits for the batches in flight
  RolloutPipeline(const RolloutPipeline&) = delete;
  RolloutPipeline& operator=(const RolloutPipeline&) = delete;

  // Called at the start of trainer step `step` (the live weights are W_step,
  // the trainer idle; `version` their optimiser step count): batch `step`,
  // waited for or sampled now, after launching the batches ahead.
  RolloutBatch take(int64_t step, int32_t version);
  // Waits until nothing is in flight (before evaluating on the shared environment).
  void wait_idle();
  int64_t in_flight() const { return static_cast<int64_t>(inflight_.size()); }

 private:
  struct Slot {
    int64_t step = 0;
    std::shared_future<RolloutBatch> result;
  };
  void launch(int64_t step, int64_t at, int32_t version);

  CausalLM live_, rollout_;
  int64_t depth_;
  std::function<bool(int64_t)> is_drain_;
  int64_t end_;
  Produce produce_;
  std::deque<Slot> inflight_;  // in step order
  int64_t launched_ = -1;      // the last step launched
};

}  // namespace rlf

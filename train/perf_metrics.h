// A step's model FLOP utilisation (MFU) and throughput per phase, in every
// run's metrics (model/flops.h has the formulas):
//
//   perf/peak_gflops         the matmul peak measured once at the run's start
//   perf/mfu_fwd_bwd         the update's training FLOPs (every epoch) over
//                            time/update_s x the peak
//   perf/mfu_wall            the step's FLOPs (a forward over every sequence
//                            sampled this step (rollout/generated_tokens in
//                            the metrics), the reference's forward, the update)
//                            over time/step_s x the peak
//   perf/update_tokens_per_s the update's tokens (every epoch) per second
//
// FLOPs count the episodes' real tokens, not padding or checkpointing's
// recomputation, as MFU conventionally does. The classifier counts the rows
// each pass computes: none for the tokens before an episode's first
// loss-weighted one (the prompt, whose logits no pass needs), the vocabulary
// after it; where the update's log-probs run over kept sets (sampling-mask
// replay, `kept_set_logprobs`), the kept ids and the target per token that
// has a set: that is the arithmetic the loss needs (model/kept_logits.h).
#pragma once

#include <vector>

#include "env/episode.h"
#include "model/config.h"
#include "util/json_util.h"

namespace rlf {

struct StepPerf {
  ModelConfig config;      // the policy's shape
  double peak_flops = 0;   // FLOP/s (model/flops.h measure_matmul_peak); 0 = no perf/mfu_* metrics
  bool full = true;        // every weight trained (false: LoRA, the base frozen)
  bool reference = false;  // a reference model's forward per step
  int64_t epochs = 1;      // passes of the update over the episodes
  bool kept_set_logprobs = false;  // the update's log-probs over the episodes' kept sets (Trainer::logprobs_over_kept_sets)

  // Adds the perf/* metrics for `episodes`, reading time/update_s and time/step_s from `m`.
  void add_metrics(const std::vector<Episode>& episodes, Json& m) const;
};

}  // namespace rlf

// The [sft] warm start of an RL, DPO or reward-model run (fresh runs only)
// and the SFT control of run.sft_control.
//
// run_warm_start: SFT on [sft.data] before the run's steps — the ce term alone,
// its own optimiser (constant sft.lr), batches of sft.batch_size pairs with
// one optimiser step each, for sft.steps steps or until greedy pass@1 on the
// first sft.stop_eval_prompts training prompts reaches sft.stop_at_pass1
// (measured every sft.stop_eval_every steps). With run.warm_start_cache
// (and no run.sft_control) the warmed policy of the same (model, data, sft,
// seed, decontamination) key is loaded from CACHE/<hash of the key>/ instead,
// or saved there after training.
//
// sft_control: the post-SFT weights trained by SFT alone for the RL phase's
// wall time, then greedy held-out pass@1: what the RL steps bought over more SFT.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "train/run_context.h"
#include "train/run_kind_sft.h"
#include "train/trainer.h"

namespace rlf {

struct WarmStart {
  bool warmed = false;  // the policy was warmed (trained or loaded from the cache)
  int64_t steps = 0;    // SFT steps of the warmed policy (trained here or by the cached run)
  // Kept for the SFT control (run.sft_control) when trained here (null when loaded from the cache):
  std::unique_ptr<Trainer> trainer;
  std::unique_ptr<SftSource> source;
  std::vector<torch::Tensor> weights;  // the policy right after the warm start (run.sft_control only)
};

// Warms r.policy in place (see above).
WarmStart run_warm_start(RunContext& r);

// run.sft_control; `*steps`: the SFT steps the control ran. Needs a warm start trained by this process.
double sft_control(RunContext& r, WarmStart& w, double seconds, int64_t* steps);

}  // namespace rlf

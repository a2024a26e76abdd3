// The training-step benchmark behind `rlf bench train`: full steps of
// next-token NLL on random token batches with a randomly initialised model of a
// named shape (or a model directory) — forward, backward and the AdamW step of
// train/optimizer.h — measuring tokens per second and the time of each phase.
//
// Precision: "fp32" trains in fp32; "bf16" runs forward and backward in bf16
// with fp32 master weights and fp32 moments in the optimiser (the mixed
// precision rlf trains with).
//
// Shapes: B batch rows, T tokens per row (--seq), V vocab.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/memory_levers.h"
#include "util/json_util.h"

namespace rlf {

struct TrainBenchOptions {
  std::string shape = "stories110M";  // preset name (stories15M, stories110M, ...) or a model path
  int64_t batch = 4;                  // B: rows per step
  int64_t seq = 256;                  // T: tokens per row (targets are the next tokens)
  std::string dtype = "bf16";         // fp32 | bf16 (bf16: fp32 master weights in the optimiser)
  std::string device = "cpu";
  int64_t steps = 5;                  // timed steps; medians are reported
  int64_t warmup = 1;                 // untimed steps first (allocations, optimiser state, kernel caches)
  double lr = 1e-5;                   // learning rate of the AdamW steps (small: weights stay sane)
  uint64_t seed = 0;                  // weights and token batches
  bool fast_cpu = true;               // fp32 CPU fast path (CausalLM::set_fast_cpu_path)
  int64_t lora_rank = 0;              // > 0: train LoRA adapters of this rank (alpha = 2 r) on lora_targets, base frozen
  std::vector<std::string> lora_targets{"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"};
  MemoryLevers levers;                // auto, auto, as runs (auto checkpointing's threshold from this machine)
  // Row lengths: "full" = every row `seq` tokens; "mixed" = as completions
  // come out of rollouts, mostly short and a few long: each row (per step,
  // seeded) with probability 0.8 uniform in [seq/16, seq/4], else in
  // [seq/2, seq]. Rows shorter than `seq` are padding on the grid, or none
  // with levers.padding_free.
  std::string lengths = "full";

  void validate() const;
};

// Runs `warmup` + `steps` training steps (a fresh random batch each) and
// returns a JSON object: tokens_per_s (B*T / median step time), ms_per_step,
// forward_ms, backward_ms, optimizer_ms (medians), forward_logprobs_ms (the
// part of forward_ms spent in the output head, log-softmax and loss), batch,
// seq, dtype, params, threads, loss_first/loss_last, peak_rss_mb (the
// process's), peak_rss_mb_update (the timed steps' own peak), the levers'
// settings and whether they applied, peak_gflops (the best of five 2048³ matmuls now, the
// model's dtype, CPU), mfu_fwd_bwd and mfu_step (model/flops.h),
// real_tokens_per_step and padding_free (mixed lengths: tokens_per_s counts
// real tokens), ...
Json run_train_bench(const TrainBenchOptions& options);

}  // namespace rlf

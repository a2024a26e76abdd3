// The generation benchmark behind `rlf bench generate`: batched sampling from
// a randomly initialised model of a named shape (or a model directory),
// measuring aggregate tokens per second.
#pragma once

#include <cstdint>
#include <string>

#include "util/json_util.h"

namespace rlf {

struct GenerateBenchOptions {
  std::string shape = "stories110M";  // preset name (stories15M, stories110M, ...) or a model path
  int64_t batch = 16;                 // concurrent sequences (distinct random prompts)
  std::string dtype = "bf16";         // fp32 | bf16
  std::string device = "cpu";
  int64_t new_tokens = 128;           // tokens generated per sequence (EOS ignored)
  int64_t prompt_len = 16;            // random prompt tokens per sequence
  int64_t group = 1;                  // samples per prompt (batch / group prompts; must divide batch)
  int64_t top_k = 0;                  // sample from the k most likely tokens (0 = the whole vocabulary)
  bool share_prompt = true;           // a group's rows read one copy of its prompt's KV cache (EngineOptions)
  int64_t repeats = 1;                // timed runs; the median is reported
  uint64_t seed = 0;
  bool fast_cpu = true;               // fp32 CPU inference path (CausalLM::set_fast_cpu_path)
  bool pack_weights = true;           // decoding multiplies by packed weight panels (EngineOptions)

  void validate() const;
};

// Runs one warm-up generation, then `repeats` timed ones; returns a JSON
// object with tokens_per_s (generated tokens / wall time, prefill included),
// decode_tokens_per_s, ms_per_step, batch, dtype, params, ...; and the step's
// matmul bound, timed right after each timed run: linear_ms_per_step (every
// projection and the classifier at `batch` rows, through the path decoding
// takes; median over the runs, each run's in linear_ms_per_step_runs),
// linear_bound_tokens_per_s, fraction_of_linear_bound (the median of each
// run's linear ms / decode ms per step; each run's in
// fraction_of_linear_bound_runs), weight_bytes_per_step and weight_gb_per_s (weights
// read per decode step / its time: the bandwidth batch 1 achieves);
// linear_ms_per_step_libtorch and fraction_of_libtorch_linear_bound: the
// same matmuls through LibTorch's linear (OpenBLAS), the bound without
// rlf's kernels; pack_s: packing the weights (once per generate call, part
// of the wall time); kv_cache_mb: the most the KV cache held (rows plus
// shared prompts).
Json run_generate_bench(const GenerateBenchOptions& options);

}  // namespace rlf

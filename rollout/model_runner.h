// The model runner: the engine's two forward passes over the KV cache
// (nano-vllm's ModelRunner), each returning the fp32 logits the sampler
// draws from, on the model's device. Both run without autograd.
//
// prefill: a group's prompt, once. Shared (a group of n > 1 samples with
// EngineOptions::share_prompt_cache): into a one-row cache of exactly the
// prompt's length that rows [row0, row0 + n) read (KVCache::set_prefix).
// Not shared: into row row0, then copied to the group's other rows.
// decode: one token per running row (its last token at its last position),
// rows [0, n) of the cache, which must be the running rows in order.
#pragma once

#include <cstdint>
#include <vector>

#include <torch/torch.h>

#include "model/kv_cache.h"
#include "model/transformer.h"
#include "rollout/sequence.h"

namespace rlf::rollout {

// The logits [1, V] of the prompt's last position.
torch::Tensor prefill_prompt(CausalLMImpl& model, KVCache& cache, const std::vector<int32_t>& prompt_ids,
                             int64_t row0, int64_t n, bool share);

// The logits [n, V] of every running row's next token (n = rows.size()).
torch::Tensor decode_logits(CausalLMImpl& model, KVCache& cache, const std::vector<Sequence>& rows);

}  // namespace rlf::rollout

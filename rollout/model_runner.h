// The model runner: the engine's two forward passes over the KV cache
// (nano-vllm's ModelRunner), each returning the fp32 logits the sampler
// draws from, on the model's device. Both run without autograd.
//
// prefill: a group's prompt, once (prefill_prompts: several groups' in one
// forward). Shared (a group of n > 1 samples with
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

// One admitted group's prompt: what prefill_prompt takes.
struct PromptPrefill {
  const std::vector<int32_t>* prompt_ids = nullptr;
  int64_t row0 = 0, n = 1;
  bool share = false;
};

// Prompts batched into one forward: decoding weights are read once for all
// of them, not once per prompt (a 16-token prompt alone multiplies 16 rows
// by every weight, from memory). Up to kPrefillBatchTokens padded tokens per
// forward (prompts in order; a longer prompt goes alone): right-padded into
// a scratch cache of that many slots, then each prompt's own positions are
// copied where prefill_prompt would put them. Padding follows a prompt, so
// causal attention never lets a prompt see it. The logits [k, V] (row i:
// prompt i's last position) match prefill_prompt's to float rounding (the
// products may take another kernel at more rows).
torch::Tensor prefill_prompts(CausalLMImpl& model, KVCache& cache, const std::vector<PromptPrefill>& prompts);
// Padded prompt tokens per batched prefill forward (scratch cache and
// activations scale with it).
constexpr int64_t kPrefillBatchTokens = 1024;

// The logits [n, V] of every running row's next token (n = rows.size()).
// With `classifier_s`, adds the seconds the classifier took (wall-clock; on
// a GPU, without a synchronise, the time to queue it).
torch::Tensor decode_logits(CausalLMImpl& model, KVCache& cache, const std::vector<Sequence>& rows,
                            double* classifier_s = nullptr);

}  // namespace rlf::rollout

// Top log-probs: for requests with GenerationRequest::top_logprobs = k > 0,
// the k most likely tokens of every sampled position and their log-probs at
// temperature 1, unfiltered, most likely first (what OpenAI's top_logprobs
// reports). Appended (forced) tokens get an empty entry, pushed with the
// token (Sequence::push_forced); this records the sampled rows' entries.
#pragma once

#include <cstdint>
#include <vector>

#include <torch/torch.h>

#include "rollout/sequence.h"

namespace rlf::rollout {

// After rows [row0, row0 + n) took their tokens from `logits` [n, V] (any
// device): appends the top-k entry of every row that asked for one and drew
// its token. One log-softmax and one topk over the batch, at the largest k asked.
void record_top_logprobs(const torch::Tensor& logits, std::vector<Sequence>& rows, int64_t row0);

}  // namespace rlf::rollout

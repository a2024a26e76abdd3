// Episodes laid out for the model: right-padded [B, T] tensors where
// position t predicts token t + 1 (T = the longest episode's length - 1),
// and the split of a step's episodes into micro-batches.
#pragma once

#include <torch/torch.h>

#include <vector>

#include "env/episode.h"
#include "model/transformer.h"

namespace rlf {

struct MicroBatch {
  torch::Tensor input_ids;   // [B, T] int64
  torch::Tensor positions;   // [B, T] int64
  torch::Tensor key_mask;    // [B, T] bool, false on padding
  torch::Tensor targets;     // [B, T] int64
  torch::Tensor weight;      // [B, T] fp32: loss weight of the target token (0 on prompt, observations, padding)
  torch::Tensor old_logp;    // [B, T] fp32: behaviour log-prob of the target token
  torch::Tensor behaviour_logp;  // [B, T] fp32: the rollout's log-probs where the trainer recomputed old_logp
                                 // (NaN on other rows), or undefined when no episode has any
  torch::Tensor ref_logp;    // [B, T] fp32, or undefined when the episodes carry none
  torch::Tensor advantages;  // [B, T] fp32, or undefined when the episodes carry none
  torch::Tensor off_policy;  // [B, T] fp32: 1 on off-policy tokens (see make_micro_batch)
  torch::Tensor teacher_logp;  // [B, T] fp32 teacher log-probs (0 where none), or undefined when no episode has any
  torch::Tensor teacher_mask;  // [B, T] fp32: 1 on tokens of episodes with teacher log-probs (with teacher_logp)
  torch::Tensor teacher_topk_ids;   // [B, T, k] int64: the teacher's top-k tokens for the target (distill.top_k > 0;
                                    // rows without them: 0..k-1), or undefined when no episode has any
  torch::Tensor teacher_topk_logp;  // [B, T, k + 1] fp32: their log-probs and the tail bucket's (rows without: uniform)
  torch::Tensor shaped;      // [B, T] fp32: 1 on tokens of refinement episodes (trained with policy shaping,
                             // algorithms/policy_shaping.h), or undefined when the micro-batch has none
  torch::Tensor old_value;   // [B, T] fp32: the critic's value before the target token when scored (0 where none),
                             // or undefined when no episode has value targets
  torch::Tensor returns;     // [B, T] fp32: GAE return of the target token (with old_value)
  torch::Tensor value_mask;  // [B, T] fp32: 1 on tokens with a (finite) value target (with old_value)
  torch::Tensor ratings;     // [B, K] fp32: Episode::ratings (NaN = not rated), or undefined when no episode has any
  torch::Tensor seq_group;   // [B] int64 on the CPU: each row's Episode::group
  torch::Tensor seq_reward;  // [B] fp64 on the CPU: each row's Episode::reward (NaN where missing)
  torch::Tensor seq_correct;   // [B] fp32 on the device: 1 correct, 0 not, NaN unknown (Episode::correct)
  torch::Tensor seq_accuracy;  // [B] fp32 on the device: Episode::group_accuracy (NaN unknown)
  int64_t n_sequences = 0;   // B
};

// A token is off-policy when its episode is (Episode::on_policy false:
// replayed, or sampled under another context), or when the weights that
// sampled it (Episode::policy_version) are older than `current_version`, the
// optimiser step about to be taken (later mini-batches and epochs of a step);
// -1 = only the episode flag counts. Throws rlf::Error when an episode has
// fewer than two tokens or its per-token vectors do not match its tokens.
MicroBatch make_micro_batch(const std::vector<const Episode*>& episodes, torch::Device device,
                            int64_t current_version = -1);

// Splits episodes into micro-batches of at most `size` sequences, sorted by
// length so padding stays small (stable: ties keep their order).
std::vector<std::vector<const Episode*>> split_micro_batches(const std::vector<const Episode*>& episodes, int64_t size);

// Like split_micro_batches, but the episodes of one group (Episode::group)
// stay together (terms that compare the members of a group: preference
// losses); groups sorted by their longest episode are packed into
// micro-batches of at most `size` sequences (a larger group is one on its own).
std::vector<std::vector<const Episode*>> split_micro_batches_by_group(const std::vector<const Episode*>& episodes,
                                                                      int64_t size);

// The first column of a micro-batch where `weight` [B, T] or any of
// `term_weights` (each [B, T]) is non-zero: no loss reads a column before it
// (the prompts). 0 when none is non-zero, or a term's weights have another shape.
int64_t first_weighted_column(const torch::Tensor& weight, const std::vector<torch::Tensor>& term_weights = {});

// Which tokens recompute_logprobs computes.
enum class LogprobScope {
  AllTokens,          // every token t >= 1
  FromFirstWeighted,  // per micro-batch, from its first token with loss_weight > 0 on
                      // (first_weighted_column); the tokens before it are 0, not computed.
                      // For callers that read weighted tokens only (reference, old log-probs).
};

// Log-probs of every episode's tokens under `model` (no gradient):
// out[i][t] = log p(tokens[t] | tokens[< t]) for t >= 1 (out[i][0] = 0), in
// `scope`; the computed values do not depend on the scope (bit for bit).
std::vector<std::vector<float>> recompute_logprobs(CausalLMImpl& model, const std::vector<const Episode*>& episodes,
                                                   int64_t micro_batch_size,
                                                   LogprobScope scope = LogprobScope::AllTokens);

// The teacher's k most likely next tokens at every position of every
// episode and their log-probs with a tail bucket (algorithms/distill_divergence.h
// teacher_topk_buckets), no gradient, the logits a chunk of positions at a
// time: row t of an episode is the distribution of tokens[t] (rows 0 and
// those before each micro-batch's first weighted column: ids 0, log-probs 0).
struct TeacherTopK {
  std::vector<int32_t> ids;      // [tokens * k]
  std::vector<float> logprobs;   // [tokens * (k + 1)]
};
// Also sets (*token_logprobs)[i] to recompute_logprobs' out[i] (the same forward) when given.
std::vector<TeacherTopK> teacher_topk(CausalLMImpl& model, const std::vector<const Episode*>& episodes, int64_t k,
                                      int64_t micro_batch_size, std::vector<std::vector<float>>* token_logprobs = nullptr);

// The critic's values (output `label` of a classifier's score head) before
// every episode's tokens (no gradient): out[i][t] = V(tokens[< t]), the state
// in which tokens[t] was chosen, for t >= 1 (out[i][0] = 0).
std::vector<std::vector<float>> recompute_values(CausalLMImpl& critic, const std::vector<const Episode*>& episodes,
                                                 int64_t micro_batch_size, int64_t label = 0);

}  // namespace rlf

// Episodes laid out for the model: right-padded [B, T] tensors where
// position t predicts token t + 1 (T = the longest episode's length - 1),
// and the split of a step's episodes into micro-batches.
//
// A micro-batch is a set of named streams (Stream keys below): every per-token
// stream of an Episode declared in env/token_streams.h under its own name,
// copied, padded and masked as its one declaration there says; the layout
// read from Episode::tokens; and a few streams make_micro_batch derives from
// per-episode fields. Adding a per-token stream is one row in
// env/token_streams.h (docs/DESIGN.md "Per-token streams"). The copy reads
// only a layout planned once per micro-batch (where each episode's positions
// land: row, first column, length): right padding. The streams stay on that
// grid, so every loss term reads [B, T] as it always has; what runs without
// padding is the forward (forward_for_heads): the layers and the log-prob
// heads take the real tokens alone, concatenated, and their results are put
// back on the grid. Which episodes share a micro-batch is split_micro_batches'
// choice: a number of sequences, or a token budget.
#pragma once

#include <torch/torch.h>

#include <array>
#include <cstdint>
#include <vector>

#include "env/episode.h"
#include "model/transformer.h"

namespace rlf {

// The keys of a micro-batch's tensors. Shapes: B sequences (rows), T positions.
enum class Stream : uint8_t {
  // Every row of RLF_TOKEN_STREAMS (env/token_streams.h), under its name:
  // [B, T] (fp32 for float, int64 for int32_t), [B, T, k] for k per token;
  // column t holds token t + 1's value. Rows marked Never are never present.
#define RLF_STREAM_KEY(type, name, ...) name,
  RLF_TOKEN_STREAMS(RLF_STREAM_KEY)
#undef RLF_STREAM_KEY
  // The layout, from Episode::tokens:
  input_ids,  // [B, T] int64: token t
  targets,    // [B, T] int64: token t + 1
  positions,  // [B, T] int64: t
  key_mask,   // [B, T] bool: false on padding
  // Derived per token, [B, T] fp32:
  off_policy,  // 1 on off-policy tokens (see make_micro_batch)
  shaped,      // 1 on tokens of refinement episodes (trained with policy shaping,
               // algorithms/policy_shaping.h); only in micro-batches that have any
  // Per sequence:
  ratings,       // [B, K] fp32: Episode::ratings (NaN = not rated); only when an episode has any
  seq_group,     // [B] int64 on the CPU: Episode::group
  seq_reward,    // [B] fp64 on the CPU: Episode::reward (NaN where missing)
  seq_correct,   // [B] fp32: 1 correct, 0 not, NaN unknown (Episode::correct)
  seq_accuracy,  // [B] fp32: Episode::group_accuracy (NaN unknown)
  count_,        // the number of keys (not a stream)
};
inline constexpr size_t n_streams = static_cast<size_t>(Stream::count_);
// "loss_weight", "input_ids", ... (the key's name above).
const char* stream_name(Stream s);

struct MicroBatch {
  int64_t n_sequences = 0;  // B

  // Whether the micro-batch carries `s` (streams marked Any / All in
  // env/token_streams.h, shaped and ratings may be absent).
  bool has(Stream s) const { return tensors_[static_cast<size_t>(s)].defined(); }
  // The tensor of `s`; throws rlf::Error naming the stream when it is absent.
  const torch::Tensor& operator[](Stream s) const;
  // The [B, T] fp32 mask of a stream declared with a mask (env/token_streams.h:
  // Rows, Finite); throws rlf::Error when there is none.
  const torch::Tensor& mask(Stream s) const;
  bool has_mask(Stream s) const { return masks_[static_cast<size_t>(s)].defined(); }
  // loss_weight * mask(s): the loss weights of the tokens that carry stream
  // `s` (zeros when the micro-batch has no mask of `s`).
  torch::Tensor weight_where(Stream s) const;
  void set(Stream s, torch::Tensor t) { tensors_[static_cast<size_t>(s)] = std::move(t); }
  void set_mask(Stream s, torch::Tensor t) { masks_[static_cast<size_t>(s)] = std::move(t); }

 private:
  std::array<torch::Tensor, n_streams> tensors_;
  std::array<torch::Tensor, n_streams> masks_;
};

// A token is off-policy when its episode is (Episode::on_policy false:
// replayed, or sampled under another context), or when the weights that
// sampled it (Episode::policy_version) are older than `current_version`, the
// optimiser step about to be taken (later mini-batches and epochs of a step);
// -1 = only the episode flag counts. Throws rlf::Error when an episode has
// fewer than two tokens or its per-token vectors do not match its tokens.
MicroBatch make_micro_batch(const std::vector<const Episode*>& episodes, torch::Device device,
                            int64_t current_version = -1);

// The model's hidden states [B, T, d] over a micro-batch's layout
// (input_ids, positions, key_mask, moved to the model's device), as a forward
// with gradient when grad mode is on.
torch::Tensor forward_micro_batch(CausalLMImpl& model, const MicroBatch& mb);

// A micro-batch's forward for the loss heads (CausalLM::token_logprobs*,
// scores), `from` being its first column any loss reads
// (first_weighted_column). Padded: `hidden` [B, T, D] over the whole grid,
// `targets` [B, T]. Padding-free (the policy's MemoryLevers::padding_free,
// per micro-batch): the layers run over the real tokens alone
// (CausalLM::forward_hidden's `tokens`), and `hidden` [1, M, D] and
// `targets` [1, M] hold the M real positions at columns >= `from`,
// concatenated; to_grid() puts a head's results back on the [B, T] grid,
// zeros elsewhere (where the padded path has 0 before `from`, and whatever
// the padding's hidden states gave on padding, which no loss weighs).
struct MicroBatchForward {
  torch::Tensor hidden;
  torch::Tensor targets;
  torch::Tensor heads;  // padding-free: [M] int64, each position's flat index b*T + t; undefined = padded
  int64_t rows = 0, columns = 0;  // B, T
  bool padding_free() const { return heads.defined(); }
  // [1, M, ...] -> [B, T, ...] with autograd (padded: x itself).
  torch::Tensor to_grid(const torch::Tensor& x) const;
  // [B, T, ...] -> [1, M, ...] (padded: x itself).
  torch::Tensor from_grid(const torch::Tensor& x) const;
};
MicroBatchForward forward_for_heads(CausalLMImpl& model, const MicroBatch& mb, int64_t from);

// Splits episodes into micro-batches of at most `size` sequences, sorted by
// length so padding stays small (stable: ties keep their order). With a
// token budget `max_tokens` > 0, a micro-batch instead takes episodes while
// their positions (tokens - 1 each) fit the budget, whatever their number
// (an episode longer than the budget is one on its own).
std::vector<std::vector<const Episode*>> split_micro_batches(const std::vector<const Episode*>& episodes, int64_t size,
                                                             int64_t max_tokens = 0);

// Like split_micro_batches, but the episodes of one group (Episode::group)
// stay together (terms that compare the members of a group: preference
// losses); groups sorted by their longest episode are packed into
// micro-batches of at most `size` sequences, or with `max_tokens` > 0 of at
// most that many positions (a larger group is one on its own).
std::vector<std::vector<const Episode*>> split_micro_batches_by_group(const std::vector<const Episode*>& episodes,
                                                                      int64_t size, int64_t max_tokens = 0);

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
// `scope`; the computed values do not depend on the scope (bit for bit on
// the padded grid; to float rounding where the model's padding-free lever
// applies, forward_for_heads).
// `replay_mask`: renormalise over each token's sampling_mask_id where an
// episode carries it (the policy's old log-probs; never a reference's).
std::vector<std::vector<float>> recompute_logprobs(CausalLMImpl& model, const std::vector<const Episode*>& episodes,
                                                   int64_t micro_batch_size,
                                                   LogprobScope scope = LogprobScope::AllTokens,
                                                   bool replay_mask = false);

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

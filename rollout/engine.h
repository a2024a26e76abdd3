// RolloutEngine: batched generation with a KV cache for the policy it borrows.
//
// The engine does not own the weights: it holds a reference to the same
// CausalLM the trainer updates in place, so the next generate() samples from
// the new weights with no copy and no sync.
//
// Scheduling (continuous batching): up to `max_batch_rows` sequences decode
// together. A request with n samples is admitted as a group: its prompt is
// prefilled once and the prompt's cache is copied to the group's n rows
// (no recomputation per sample); rows that finish are refilled from the queue.
//
// Every finished sequence returns its prompt ids, completion ids, the policy's
// per-token log-probs at temperature 1 (from the same forward code the trainer
// uses) and a finish reason.
//
// Memory: the KV cache is reserved by reserve_cache() (or on demand by
// generate()) and stays reserved until release_cache(), which the trainer calls
// before an update to reclaim it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "model/kv_cache.h"
#include "model/transformer.h"
#include "rollout/sampling.h"
#include "tokenizer/tokenizer.h"

namespace rlf {

struct GenerationRequest {
  std::vector<int32_t> prompt_ids;  // must be non-empty
  int64_t n = 1;                    // samples of this prompt (a group)
  SamplingParams params;
};

enum class FinishReason { Stop, Length };
const char* finish_reason_name(FinishReason r);  // "stop", "length"

struct GeneratedSequence {
  int64_t request_index = 0;             // index into the generate() argument
  int64_t sample_index = 0;              // 0..n-1 within its request
  std::vector<int32_t> prompt_ids;
  std::vector<int32_t> completion_ids;   // includes the EOS/stop token when one ended it
  std::vector<float> logprobs;           // per completion token, temperature 1
  FinishReason finish_reason = FinishReason::Length;
  std::string stop;                      // what stopped it: "eos", a stop id "id:N", or the stop string
  std::string text;                      // decoded completion (stop string and EOS removed); "" without a tokenizer
};

struct EngineOptions {
  int64_t max_batch_rows = 64;    // sequences decoded together
  int64_t max_seq_len = 0;        // cache length per row; 0 = the model's max_position_embeddings
  std::vector<int32_t> eos_token_ids;  // ids that end a sequence (from the model/tokenizer; never guessed)
  uint64_t seed = 0;              // seeds requests that carry none (in request order)

  void validate() const;
};

struct EngineStats {
  int64_t n_prefill_tokens = 0;
  int64_t n_decode_tokens = 0;    // tokens sampled
  int64_t n_steps = 0;            // decode forward passes
  double prefill_s = 0;
  double decode_s = 0;
};

class RolloutEngine {
 public:
  // `tokenizer` may be null: then stop strings are rejected and `text` is empty.
  RolloutEngine(CausalLM model, std::shared_ptr<const Tokenizer> tokenizer, EngineOptions options);

  // Generates every sample of every request; results are ordered by
  // (request_index, sample_index).
  std::vector<GeneratedSequence> generate(const std::vector<GenerationRequest>& requests);

  // Reserves the cache for `n_rows` sequences of up to `max_len` tokens.
  void reserve_cache(int64_t n_rows, int64_t max_len);
  // Frees the cache (the trainer calls this before an update).
  void release_cache();
  int64_t cache_bytes() const { return cache_.reserved() ? cache_.bytes() : 0; }

  const EngineStats& stats() const { return stats_; }
  void reset_stats() { stats_ = {}; }
  const EngineOptions& options() const { return options_; }

 private:
  struct Row;
  void admit(struct Queue& queue, std::vector<Row>& rows, std::vector<GeneratedSequence>& done,
             const std::vector<GenerationRequest>& requests);
  bool finish_if_done(Row& row, std::vector<GeneratedSequence>& done);
  void decode_step(std::vector<Row>& rows);
  // Samples the next token of rows [row0, row0 + n) from fp32 CPU logits
  // [n, V] (row i of `logits` belongs to rows[row0 + i]).
  void sample_rows(const torch::Tensor& logits, std::vector<Row>& rows, int64_t row0);
  void compact(std::vector<Row>& rows, std::vector<GeneratedSequence>& done);

  CausalLM model_;
  std::shared_ptr<const Tokenizer> tokenizer_;
  EngineOptions options_;
  KVCache cache_;
  EngineStats stats_;
  uint64_t next_seed_ = 0;
};

}  // namespace rlf

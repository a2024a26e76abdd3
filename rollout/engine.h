// RolloutEngine: batched generation with a KV cache for the policy it borrows.
//
// The engine does not own the weights: it holds a reference to the same
// CausalLM the trainer updates in place, so the next generate() samples from
// the new weights with no copy and no sync.
//
// The engine's parts, one file pair each (nano-vllm's split; internal to
// the engine, in namespace rlf::rollout):
//   sequence.h         a request, its state while it decodes, its result
//   scheduler.h        which sequences decode together (continuous batching)
//   model_runner.h     the prefill and decode forward passes over the KV cache
//   batch_sampler.h    the next token of every row (sampler dispatch)
//   top_logprobs.h     the top-k log-probs a request asked for
//   turns.h            when a turn is over, and the TurnHandler's continuation
//   streaming.h        serve()'s requests, deltas and reports
//   decoding_weights.h the weights packed for decoding while a call runs
// One step (RolloutEngine::step) is: admit waiting groups (prefill, first
// token) -> decode one token per running row -> end the turns that ended ->
// compact the batch; serve() wraps it with its requests and deltas.
//
// Scheduling (continuous batching): up to `max_batch_rows` sequences decode
// together. A request with n samples is admitted as a group: its prompt is
// prefilled once into a shared prefix that the group's n rows read (one copy
// of the prompt's keys and values, not n; KVCache::set_prefix), and each
// row's own cache holds only its tokens after the prompt; rows that finish
// are refilled from the queue; the groups admitted in one step have their
// prompts prefilled in one forward (rollout::prefill_prompts). The samples'
// log-probs are those with sharing off (EngineOptions::share_prompt_cache) to
// the last bits (bit for bit on most CPUs; 6e-8 apart in the logits for two
// architectures on a Sapphire Rapids Xeon).
//
// Every finished sequence returns its prompt ids, completion ids, the policy's
// per-token log-probs at temperature 1 (from the same forward code the trainer
// uses) and a finish reason.
//
// Conversations (multi-turn): with a TurnHandler, a sequence whose turn ends
// (EOS, a stop id or string, the turn's token limit) is not finished: the
// handler sees the turn and either ends the sequence or returns observation
// tokens. The engine appends them to the row and continues decoding from the
// row's cached state: the appended tokens are fed one per decode step, in the
// same batch as every other row (no separate prefill call, so conversations
// at different turns share the batch), and the step that feeds the last of
// them samples the next turn's first token. A turn costs its new tokens only,
// never the history: EngineStats::n_fed_tokens (every token run through the
// model) is the prompts, once per group, plus each sequence's completion but
// its last token. The sequence's ids are exactly the sampled ids and the
// appended ids, in order: nothing is re-rendered or re-tokenized.
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
#include "rollout/scheduler.h"
#include "rollout/sequence.h"
#include "rollout/streaming.h"
#include "rollout/turns.h"
#include "tokenizer/tokenizer.h"

namespace rlf {

struct EngineOptions {
  int64_t max_batch_rows = 64;    // sequences decoded together
  int64_t max_seq_len = 0;        // cache length per row; 0 = the model's max_position_embeddings
  std::vector<int32_t> eos_token_ids;  // ids that end a sequence (from the model/tokenizer; never guessed)
  uint64_t seed = 0;              // seeds requests that carry none (in request order)
  bool tensor_sampling = false;   // sample with tensor ops as on a GPU (rollout/batch_sampler.h) even on the CPU;
                                  // a GPU model always does (tests compare the two paths on the CPU)
  bool share_prompt_cache = true; // a group's rows read one copy of its prompt's KV cache; false = each row
                                  // holds a copy (the layout before sharing; benchmarks compare the two)
  // (fp32 CPU: each generate call and serve loop packs the weights into column
  // panels, CausalLMImpl::pack_for_decoding, unless the model's
  // set_pack_weights(false) says not to.)

  void validate() const;
};

struct EngineStats {
  int64_t n_prefill_tokens = 0;   // prompt tokens prefilled (once per group)
  int64_t n_decode_tokens = 0;    // tokens sampled
  int64_t n_appended_tokens = 0;  // tokens appended by a TurnHandler (observations)
  int64_t n_fed_tokens = 0;       // every token run through the model (prefill + one per row per decode step)
  int64_t n_steps = 0;            // decode forward passes
  double prefill_s = 0;
  double decode_s = 0;
  double classifier_s = 0;        // of decode_s: the classifier's product (decode_logits)
  double sample_s = 0;            // of decode_s: drawing the tokens from the logits
  double pack_s = 0;              // packing the weights for decoding (once per generate / serve call)
};

class RolloutEngine {
 public:
  // `tokenizer` may be null: then stop strings are rejected and `text` is empty.
  RolloutEngine(CausalLM model, std::shared_ptr<const Tokenizer> tokenizer, EngineOptions options);

  // Generates every sample of every request; results are ordered by
  // (request_index, sample_index). With `handler`, sequences are
  // conversations (see above); without one, every sequence is one turn.
  std::vector<GeneratedSequence> generate(const std::vector<GenerationRequest>& requests,
                                          TurnHandler* handler = nullptr);

  // Continuous batching across callers: requests from `source` join the batch
  // between decode steps (their prompts prefilled when rows are free; a long
  // prompt's prefill delays the others' next token) and leave it when done,
  // until the source closes. A sample's tokens depend only on its request and
  // seed, never on what else is in the batch: a seeded request gives what
  // generate() gives. A request without a seed gets one in arrival order. A
  // failure while decoding fails the requests it holds, not the loop.
  void serve(RequestSource& source);

  // Throws rlf::Error, prefixed with `where`, when generate() would refuse
  // `req` (empty prompt, ids outside the vocabulary, a prompt at the context
  // limit, bad sampling parameters). Reads only the model's configuration:
  // safe to call from any thread.
  void check_request(const GenerationRequest& req, const std::string& where) const;
  // Tokens a sequence may hold: max_seq_len, else the model's max_position_embeddings.
  int64_t context_limit() const;

  // Reserves the cache for `n_rows` sequences of up to `max_len` tokens each
  // after their shared prompt (all of their tokens when they share none).
  void reserve_cache(int64_t n_rows, int64_t max_len);
  // Frees the cache (the trainer calls this before an update).
  void release_cache();
  // Bytes the cache holds now (rows and live shared prompts), and the most
  // it held since it was reserved (what a generate() call needed).
  int64_t cache_bytes() const { return cache_.reserved() ? cache_.bytes() : 0; }
  int64_t cache_peak_bytes() const { return cache_.reserved() ? cache_.peak_bytes() : 0; }

  const EngineStats& stats() const { return stats_; }
  void reset_stats() { stats_ = {}; }
  const EngineOptions& options() const { return options_; }

 private:
  // One step (nano-vllm's schedule -> run -> postprocess) over `sched`'s
  // batch; with `session` (serve) it also streams and reports.
  void step(rollout::Scheduler& sched, TurnHandler* handler, rollout::ServeSession* session);
  // Schedule: admits waiting groups into free rows while any fit (their
  // prompts prefilled together, then every sample of a group draws its first
  // token from its prompt's logits).
  void admit(rollout::Scheduler& sched, TurnHandler* handler);
  // Run: feeds every running row its last token and takes the next.
  void decode(std::vector<rollout::Sequence>& rows);
  // Rows [row0, row0 + n) take their next token from `logits` [n, V].
  void take_tokens(const torch::Tensor& logits, std::vector<rollout::Sequence>& rows, int64_t row0);
  // Postprocess: ends the turns that ended among rows [row0, end).
  void end_turns(std::vector<rollout::Sequence>& rows, int64_t row0, TurnHandler* handler);
  // True when `req`'s samples share one copy of its prompt's cache.
  bool shares_prompt(const GenerationRequest& req) const;
  // Gives a request without a seed the engine's next one (arrival order).
  void seed_if_unset(GenerationRequest& req);

  CausalLM model_;
  std::shared_ptr<const Tokenizer> tokenizer_;
  EngineOptions options_;
  KVCache cache_;
  EngineStats stats_;
  uint64_t next_seed_ = 0;
};

}  // namespace rlf

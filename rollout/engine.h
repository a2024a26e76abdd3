// RolloutEngine: batched generation with a KV cache for the policy it borrows.
//
// The engine does not own the weights: it holds a reference to the same
// CausalLM the trainer updates in place, so the next generate() samples from
// the new weights with no copy and no sync.
//
// Scheduling (continuous batching): up to `max_batch_rows` sequences decode
// together. A request with n samples is admitted as a group: its prompt is
// prefilled once into a shared prefix that the group's n rows read (one copy
// of the prompt's keys and values, not n; KVCache::set_prefix), and each
// row's own cache holds only its tokens after the prompt; rows that finish
// are refilled from the queue. The samples' tokens and log-probs are the same,
// bit for bit, with sharing off (EngineOptions::share_prompt_cache).
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
#include "tokenizer/tokenizer.h"

namespace rlf {

struct GenerationRequest {
  std::vector<int32_t> prompt_ids;  // must be non-empty
  int64_t n = 1;                    // samples of this prompt (a group)
  SamplingParams params;            // params.max_new_tokens limits each turn
  // Conversations: tokens after the prompt for the whole sequence (every
  // turn and every appended observation). 0 = params.max_new_tokens (one turn).
  int64_t max_total_tokens = 0;
  // Also record, for every sampled token, the top_logprobs most likely tokens
  // and their log-probs at temperature 1 (what OpenAI's top_logprobs reports). 0 = off.
  int64_t top_logprobs = 0;

  // The row length limit after the prompt (max_total_tokens or max_new_tokens).
  int64_t total_budget() const { return max_total_tokens > 0 ? max_total_tokens : params.max_new_tokens; }
};

enum class FinishReason { Stop, Length };

struct TokenLogprob {
  int32_t id = 0;
  float logprob = 0;  // temperature 1, unfiltered
};
const char* finish_reason_name(FinishReason r);  // "stop", "length"

// One stretch of a completion: a policy turn (sampled) or tokens the caller
// appended between turns (an observation).
struct CompletionSegment {
  bool sampled = true;        // true: the policy's turn; false: appended by the TurnHandler
  int64_t begin = 0;          // [begin, end) into GeneratedSequence::completion_ids
  int64_t end = 0;
  std::string text;           // sampled: the decoded turn (stop string and EOS removed); appended: ""
  FinishReason finish_reason = FinishReason::Length;  // sampled only
  std::string stop;           // sampled only: "eos", "id:N", the stop string, or "" (length)
};

// What the handler sees when a turn ends.
struct TurnEnd {
  int64_t request_index = 0;
  int64_t sample_index = 0;
  int64_t turn = 0;                      // 0-based index of the turn that just ended
  const CompletionSegment* segment = nullptr;  // the turn (text, finish reason, stop)
  const std::vector<int32_t>* completion_ids = nullptr;  // everything after the prompt so far
  int64_t length = 0;                    // tokens in the sequence now (prompt included)
  int64_t room = 0;                      // tokens the sequence may still grow by (budget and context; 0 = none)
};

// The handler's answer: end the sequence, or append `append_ids` (possibly
// none) and let the policy take another turn. Continuing needs
// append_ids.size() + 1 <= room (at least one token left for the policy);
// otherwise the sequence ends with GeneratedSequence::overflowed set.
struct TurnContinuation {
  bool done = true;
  std::vector<int32_t> append_ids;
};

// Decides, at the end of each turn, how a conversation goes on. Called on the
// engine's thread, between decode steps; an exception from it propagates out
// of generate() (handlers catch their own per-sequence failures).
class TurnHandler {
 public:
  virtual ~TurnHandler() = default;
  virtual TurnContinuation on_turn_end(const TurnEnd& turn) = 0;
};

struct GeneratedSequence {
  int64_t request_index = 0;             // index into the generate() argument
  int64_t sample_index = 0;              // 0..n-1 within its request
  std::vector<int32_t> prompt_ids;
  std::vector<int32_t> completion_ids;   // includes the EOS/stop token when one ended it
  std::vector<float> logprobs;           // per completion token, temperature 1 (0 on appended tokens)
  // With GenerationRequest::top_logprobs = k > 0: per completion token, the k
  // most likely tokens, most likely first (empty on appended tokens); else empty.
  std::vector<std::vector<TokenLogprob>> top_logprobs;
  FinishReason finish_reason = FinishReason::Length;  // of the last turn
  std::string stop;                      // what stopped the last turn: "eos", a stop id "id:N", or the stop string
  std::string text;                      // the last turn decoded (stop string and EOS removed); "" without a tokenizer
  std::vector<CompletionSegment> segments;  // turns and appended stretches, in order (one segment without a handler)
  bool overflowed = false;               // the handler asked to append more than the room left
};

struct EngineOptions {
  int64_t max_batch_rows = 64;    // sequences decoded together
  int64_t max_seq_len = 0;        // cache length per row; 0 = the model's max_position_embeddings
  std::vector<int32_t> eos_token_ids;  // ids that end a sequence (from the model/tokenizer; never guessed)
  uint64_t seed = 0;              // seeds requests that carry none (in request order)
  bool tensor_sampling = false;   // sample with tensor ops as on a GPU (sample_rows_on_device) even on the CPU;
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
  double pack_s = 0;              // packing the weights for decoding (once per generate / serve call)
};

// Serving (RolloutEngine::serve): requests arrive while others decode.
struct LiveRequest {
  int64_t id = 0;              // the caller's id, unique among requests not yet finished
  GenerationRequest request;
};

// New tokens of one live sample, after a step that produced some. Offsets are
// absolute, so a consumer that missed nothing appends; the text holds back
// what could still turn out to be the start of a stop string (it arrives with
// a later delta, or is dropped when the stop string completes). The final
// GeneratedSequence (RequestSource::on_finished) is authoritative: a consumer
// sends whatever of it the deltas have not covered.
struct StreamDelta {
  int64_t id = 0;
  int64_t sample = 0;
  int64_t token_begin = 0;                 // index of token_ids[0] in the completion
  std::vector<int32_t> token_ids;
  std::vector<float> logprobs;
  std::vector<std::vector<TokenLogprob>> top_logprobs;  // as GeneratedSequence::top_logprobs
  int64_t text_begin = 0;                  // byte offset of `text` in the completion's text
  std::string text;
};

// Where serve() gets its requests and sends its results. Called on the
// engine's thread only; implementations synchronise with their producers.
class RequestSource {
 public:
  virtual ~RequestSource() = default;
  // Between decode steps: appends the requests that arrived to `out`. With
  // `wait` (nothing is decoding or queued) blocks until one arrives or the
  // source closes. Returns false once closed: serve() then finishes what it
  // holds and returns.
  virtual bool poll(std::vector<LiveRequest>& out, bool wait) = 0;
  // New tokens of a live sample (every step that produced some).
  virtual void on_delta(const StreamDelta&) {}
  // A sample finished: each of a request's n samples reports once
  // (GeneratedSequence::request_index is the request's id).
  virtual void on_finished(GeneratedSequence sequence) = 0;
  // The request failed (it was invalid, or the model failed while it decoded):
  // reported once, instead of its remaining samples.
  virtual void on_failed(int64_t id, const std::string& error) = 0;
  // True when the caller no longer wants request `id` (a client went away):
  // its queued and decoding samples are dropped without a report.
  virtual bool cancelled(int64_t) { return false; }
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
  struct Row;
  // True when `req`'s samples share one copy of its prompt's cache.
  bool shares_prompt(const GenerationRequest& req) const;
  void admit(struct Queue& queue, std::vector<Row>& rows, std::vector<GeneratedSequence>& done,
             TurnHandler* handler);
  // Records the top-k log-probs of rows [row0, row0 + n) that asked for them.
  void record_top_logprobs(const torch::Tensor& logits, std::vector<Row>& rows, int64_t row0);
  // serve(): the new tokens of every live row since its last delta.
  void send_deltas(std::vector<Row>& rows, RequestSource& source);
  // True when the row's current turn has ended (EOS, stop, limits).
  bool turn_over(Row& row);
  // After a turn ended: asks the handler (if any) and either marks the row
  // finished or queues the observation to be fed by the next decode steps.
  void end_turn(Row& row, TurnHandler* handler);
  void decode_step(std::vector<Row>& rows);
  // Samples the next token of rows [row0, row0 + n) from fp32 logits [n, V]
  // (row i of `logits` belongs to rows[row0 + i]); a row with appended
  // tokens queued pushes the next of them instead. CPU logits are sampled
  // here; logits on a GPU go to sample_rows_on_device.
  void sample_rows(const torch::Tensor& logits, std::vector<Row>& rows, int64_t row0);
  // The same draws with the logits left on the GPU: plain temperature
  // sampling inverts the CDF there with the row's own uniform draw (one per
  // token, as draw_from_weights), and only the chosen ids and their log-probs
  // come back; greedy and filtered (top-k/top-p/min-p) rows copy their logits
  // to the CPU path.
  void sample_rows_on_device(const torch::Tensor& logits, std::vector<Row>& rows, int64_t row0);
  void compact(std::vector<Row>& rows, std::vector<GeneratedSequence>& done);

  CausalLM model_;
  std::shared_ptr<const Tokenizer> tokenizer_;
  EngineOptions options_;
  KVCache cache_;
  EngineStats stats_;
  uint64_t next_seed_ = 0;
};

}  // namespace rlf

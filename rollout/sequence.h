// A sequence: what a caller asks for (GenerationRequest), what comes back
// (GeneratedSequence), and, inside the engine, its state while it decodes
// (rollout::Sequence, nano-vllm's Sequence).
//
// Contract of the state: a Sequence's index in the running batch is its KV
// cache row (rollout/scheduler.h keeps the two together). Its completion
// grows by exactly one token per step it takes part in: a sampled token
// (push_sampled, with the log-prob the sampler computed) or, in a
// conversation, the next appended observation token (push_forced: log-prob 0,
// nothing drawn). Its RNG is its own, seeded from the request's seed and the
// sample's index, so its draws never depend on the rest of the batch.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

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

  // Training's record of each draw (off for serving; the RL producer sets them):
  //   record_sampler_kl: GeneratedSequence::sampler_kl;
  //   record_kept: sampling-mask replay's kept sets (GeneratedSequence::kept_ids, kept_logmass),
  //     and sampler_kl then measured against the learner renormalised over them.
  bool record_sampler_kl = false;
  bool record_kept = false;

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

struct GeneratedSequence {
  int64_t request_index = 0;             // index into the generate() argument
  int64_t sample_index = 0;              // 0..n-1 within its request
  std::vector<int32_t> prompt_ids;
  std::vector<int32_t> completion_ids;   // includes the EOS/stop token when one ended it
  std::vector<float> logprobs;           // per completion token, temperature 1 (0 on appended tokens)
  // With GenerationRequest::top_logprobs = k > 0: per completion token, the k
  // most likely tokens, most likely first (empty on appended tokens); else empty.
  std::vector<std::vector<TokenLogprob>> top_logprobs;
  // With GenerationRequest::record_sampler_kl, per completion token (0 on
  // appended tokens): KL(q || p) over the whole vocabulary, q the
  // distribution the token was drawn from (temperature and filters: a point
  // mass when greedy), p the learner's: the logits' softmax at temperature
  // 1, renormalised over the kept set with record_kept (the trainer's
  // sampling-mask replay). 0 when the two are the same distribution.
  std::vector<float> sampler_kl;
  // With GenerationRequest::record_kept, per completion token: the kept set
  // of a draw that top-k, top-p or min-p filtered (ids, in no set order;
  // empty when nothing was filtered, the draw was greedy, or the token was
  // appended), and log of its mass under the temperature-1 softmax (<= 0; 0
  // where the set is empty). The log-prob renormalised over the set is
  // logprobs[t] - kept_logmass[t].
  std::vector<std::vector<int32_t>> kept_ids;
  std::vector<float> kept_logmass;
  FinishReason finish_reason = FinishReason::Length;  // of the last turn
  std::string stop;                      // what stopped the last turn: "eos", a stop id "id:N", or the stop string
  std::string text;                      // the last turn decoded (stop string and EOS removed); "" without a tokenizer
  std::vector<CompletionSegment> segments;  // turns and appended stretches, in order (one segment without a handler)
  bool overflowed = false;               // the handler asked to append more than the room left
};

// The engine's parts (rollout/*.h other than engine.h, sampling.h and
// policy.h) are internal to RolloutEngine: callers use engine.h.
namespace rollout {

// Tokens a sequence of `req` may hold, prompt included: the prompt plus its
// budget (GenerationRequest::total_budget), capped at `context_limit`.
int64_t row_limit(const GenerationRequest& req, int64_t context_limit);

// One draw's record beyond its id and log-prob (GenerationRequest::record_*).
struct DrawRecord {
  float sampler_kl = 0;           // GeneratedSequence::sampler_kl
  float kept_logmass = 0;         // GeneratedSequence::kept_logmass
  std::vector<int32_t> kept_ids;  // GeneratedSequence::kept_ids
};

// One sequence being decoded.
struct Sequence {
  int64_t request = 0;                     // request index (generate) or id (serve)
  int64_t sample = 0;                      // 0..n-1 within its request
  const GenerationRequest* req = nullptr;  // outlives the sequence
  int64_t limit = 0;                       // max prompt + completion tokens (row_limit)
  std::vector<int32_t> completion;
  std::vector<float> logprobs;
  std::vector<std::vector<TokenLogprob>> top;  // per token, when req->top_logprobs > 0
  std::vector<float> sampler_kl;               // per token, when req->record_sampler_kl
  std::vector<float> kept_logmass;             // per token, when req->record_kept
  std::vector<std::vector<int32_t>> kept_ids;  // per token, when req->record_kept
  Rng rng{0};
  std::unique_ptr<StreamDecoder> decoder;  // null without a tokenizer
  std::string text;                        // the current turn, decoded
  int64_t turn = 0;                        // index of the current turn
  int64_t turn_begin = 0;                  // where the current turn starts in `completion`
  std::vector<CompletionSegment> segments; // finished turns and appended stretches
  std::vector<int32_t> forced;             // appended tokens not yet in `completion` (fed one per decode step)
  size_t forced_at = 0;                    // the next one to push
  bool just_forced = false;                // the token pushed last was forced, not sampled
  bool finished = false;
  bool overflowed = false;
  size_t streamed_tokens = 0;              // serve(): tokens already sent as deltas
  size_t streamed_text = 0;                // serve(): bytes of `text` already sent
  FinishReason reason = FinishReason::Length;
  std::string stop;

  // Sample `sample` of `req` (request key `request`), with no tokens yet: its
  // RNG seeded from req.params.seed (which must be set) and the sample index,
  // and, with a tokenizer, a decoder primed with the prompt's tail so the
  // first completion token decodes as a continuation (keeps its leading space).
  static Sequence start(int64_t request, int64_t sample, const GenerationRequest& req, int64_t context_limit,
                        const Tokenizer* tokenizer);

  int64_t length() const { return static_cast<int64_t>(req->prompt_ids.size() + completion.size()); }
  // True when an appended token is queued: the next step pushes it instead of sampling.
  bool has_forced() const { return forced_at < forced.size(); }
  // With an appended token queued, pushes it as given (log-prob 0, nothing drawn) and returns true.
  bool push_forced();
  // Appends a sampled token, its temperature-1 log-prob and what the request records of the draw.
  void push_sampled(int32_t id, float logprob, DrawRecord record = {});
  // The result, moving the sequence's tokens out (the sequence is spent).
  GeneratedSequence release();
};

}  // namespace rollout
}  // namespace rlf

// Streaming: RolloutEngine::serve()'s traffic with its RequestSource.
// Requests arrive between decode steps, each running sample sends its new
// tokens after every step that produced some (StreamDelta), and each sample
// reports once when it finishes; a cancelled request's samples are dropped
// without a report, a failed one reports once instead of its samples.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "rollout/scheduler.h"
#include "rollout/sequence.h"

namespace rlf {

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

namespace rollout {

// serve()'s requests: those it holds (queued on the scheduler under their
// ids, or running), and everything it tells the source about them.
class ServeSession {
 public:
  // Checks a request (throws rlf::Error prefixed with `where`) and gives it a seed if it has none.
  using Prepare = std::function<void(GenerationRequest& req, const std::string& where)>;

  // `source` and `scheduler` outlive the session.
  ServeSession(RequestSource& source, Scheduler& scheduler) : source_(source), scheduler_(scheduler) {}

  // False once the source has closed.
  bool open() const { return open_; }
  // Takes the requests that arrived (waiting for one when the scheduler is
  // idle): valid ones are queued, invalid ones (a duplicate id, a check that
  // fails) are reported failed.
  void poll(const Prepare& prepare);
  // Cancelled requests leave the queue; their running rows are marked finished.
  void drop_cancelled();
  // Reports the scheduler's finished samples (dropped for cancelled or
  // failed requests) and forgets the requests with none left.
  void report();
  // Sends every running sample's new tokens and the text that is safe to show.
  void send_deltas();
  // Fails every request held and clears the scheduler (the batch's state is lost).
  void fail_all(const std::string& error);

 private:
  struct Live {
    std::unique_ptr<GenerationRequest> req;
    int64_t remaining = 0;  // samples not yet reported
    bool failed = false;
  };
  void accept(LiveRequest& lr, const Prepare& prepare);

  RequestSource& source_;
  Scheduler& scheduler_;
  std::unordered_map<int64_t, Live> live_;
  std::vector<LiveRequest> incoming_;
  bool open_ = true;
};

}  // namespace rollout
}  // namespace rlf

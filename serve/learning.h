// What `rlf serve --learn` adds to the server (serve/server.h): a learner
// that remembers what it served, takes written feedback on it and trains the
// served policy between requests. The server calls it; train/serve_learner.h
// implements it (the server does not depend on the trainer).
//
// Threads: remember(), feedback() and status() are called on HTTP threads,
// version() on any thread, update_due() and update() on the engine thread
// only, and update() only while nothing is decoding (the server drains the
// batch first, so every completion comes from exactly one policy version).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "rollout/sequence.h"
#include "util/error.h"
#include "util/json_util.h"

namespace rlf {

// A feedback request the learner refuses: `status` is the HTTP status
// (400 = a bad body, 404 = an unknown completion id), `param` the field at fault.
class FeedbackError : public Error {
 public:
  FeedbackError(int status, std::string message, std::string param = "")
      : Error(std::move(message)), status(status), param(std::move(param)) {}
  int status;
  std::string param;
};

// One served choice, as the learner needs it to train on it later.
struct ServedChoice {
  std::string prompt;               // the prompt's text as the model read it (chat: the rendered conversation)
  GeneratedSequence sequence;       // prompt and completion ids, temperature-1 log-probs, text
  int64_t version = 0;              // the policy version that produced it
};

class ServeLearning {
 public:
  virtual ~ServeLearning() = default;
  // Remembers a response's choices under its id ("cmpl-...", "chatcmpl-..."),
  // choice k at index k, so feedback can name them.
  virtual void remember(const std::string& completion_id, std::vector<ServedChoice> choices) = 0;
  // POST /v1/feedback with `body`: queues the feedback (written to the
  // feedback log before it returns) and returns the reply's JSON. Throws
  // FeedbackError (400 bad body, 404 unknown completion id).
  virtual Json feedback(const std::string& body) = 0;
  // GET /v1/learn: version, queued feedback, updates, timings.
  virtual Json status() const = 0;
  // The version of the policy being served (0 = as loaded, +1 per update).
  virtual int64_t version() const = 0;
  // True when enough feedback is queued (or the oldest waited long enough):
  // the server then drains its batch and calls update().
  virtual bool update_due() const = 0;
  // Trains on the queued feedback, saves the new version and makes it the
  // served one. Never throws: a failed update keeps its feedback queued and
  // is reported in status().
  virtual void update() = 0;
};

}  // namespace rlf

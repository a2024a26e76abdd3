// `rlf serve`: an OpenAI-compatible HTTP server over one RolloutEngine.
//
// Routes: GET /v1/models, POST /v1/completions, POST /v1/chat/completions
// (serve/openai_api.h has the wire format), GET /health; with a learner
// (`rlf serve --learn`, serve/learning.h) also POST /v1/feedback and GET
// /v1/learn, and every response's system_fingerprint is "rlf-v<version>", the
// policy version that wrote it.
//
// Learning: when the learner's update is due the engine thread stops taking
// new requests, finishes the ones it is decoding, runs the update and goes
// on with the new version. Requests that arrive meanwhile wait in the queue
// (none is dropped): a request waits at most for the running ones' remaining
// tokens plus one update (GET /v1/learn reports each update's seconds).
//
// Threads: connections wait for their request in one thread (poll), and a
// whole request is handled by one of http.threads workers (cpp-httplib behind
// serve/http_server.h); each request is parsed there and queued. One engine thread
// runs RolloutEngine::serve(): every queued request joins the decoding batch
// at the next step (continuous batching), so concurrent requests share the
// model's forward passes. A streamed request gets server-sent events as its
// tokens are sampled; a client that goes away mid-stream is noticed at its
// next write and its samples leave the batch.
//
// Robustness: a bad request gets an OpenAI error object with a 4xx and
// touches nothing else; a failure inside the engine fails the requests it
// was decoding with a 500 and the server keeps serving. More than
// max_pending requests waiting: 503. Bodies over max_body_bytes: 413. Slow
// or greedy clients cost bounded time and connections (ServeOptions::http:
// headers within 10 s, 256 connections per client address, 408 / 503
// beyond), so others, /health included, keep being answered.
//
// Security: binds to 127.0.0.1 unless told otherwise; with api_key set every
// /v1 route needs "Authorization: Bearer <api_key>" (401 otherwise).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "rollout/engine.h"
#include "rollout/policy.h"
#include "serve/http_limits.h"
#include "serve/learning.h"
#include "tokenizer/chat_template.h"

namespace rlf {

struct ServeOptions {
  std::string host = "127.0.0.1";  // interface to bind; "0.0.0.0" = every interface
  int64_t port = 8000;             // 0 = any free port (port() tells which)
  std::string model_name;          // the model id of /v1/models and "model"; required
  std::string api_key;             // "" = no authentication; else the Bearer token every /v1 request needs
  std::string chat_template = "auto";  // "auto": the tokenizer's own Jinja template (a fixed format detected from
                                       // it if it does not parse; "plain" when it has none); "none" (chat refused);
                                       // a fixed format name (tokenizer/chat_template.h); or a path to a .jinja file,
                                       // a tokenizer_config.json or a model directory
  std::string tool_parser = "auto";    // how the model writes tool calls: "auto" (from the Jinja template's markers),
                                       // "none" (requests with tools refused), hermes, llama3_json, mistral
  HttpLimits http;                 // threads (requests handled at once; streams hold one each), header/body
                                   // timeouts, connections per client and in all (serve/http_limits.h)
  int64_t max_body_bytes = 8 << 20;  // larger request bodies get 413
  int64_t max_pending = 4096;      // requests waiting for the engine beyond this get 503
  int64_t max_n = 128;             // completions one request may ask for (prompts x n)

  // Throws rlf::Error naming `prefix` + key.
  void validate(const std::string& prefix = "serve.") const;
};

class Server {
 public:
  // `policy` must outlive the server; the engine borrows its model. With
  // `learning` (borrowed, outlives the server) the server learns while it
  // serves; it trains `policy`'s weights in place between decode rounds.
  Server(Policy& policy, EngineOptions engine, ServeOptions options, ServeLearning* learning = nullptr);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Binds the socket (throws rlf::Error when the port is taken) and returns
  // the port. Called by run() if not called before.
  int bind();
  int port() const;
  // What /v1/chat/completions renders with: "jinja (<where>)", a fixed
  // format name, or "none" (refused).
  std::string chat_format() const;
  // Serves until stop(); starts the engine thread. Blocks.
  void run();
  // Makes run() return: stops accepting, fails waiting requests with 503,
  // finishes the engine thread. Safe from any thread, also before run().
  void stop();

  // Counters since start (for tests and logs).
  struct Counters {
    int64_t requests = 0;   // generation requests accepted by the engine
    int64_t errors_4xx = 0;
    int64_t errors_5xx = 0;
    int64_t cancelled = 0;  // streams whose client went away
  };
  Counters counters() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace rlf

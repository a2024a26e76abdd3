// An OpenAI-compatible chat-completions client (POST {base_url}/chat/completions)
// over libcurl, for critics that ask an LLM endpoint to critique a model's
// answer during training. Robustness over features:
//
// - complete() never throws for network, HTTP or reply problems: it returns
//   ok=false with the reason of the last attempt ("timeout after 2 s",
//   "HTTP 500: ...", "malformed reply: ...").
// - An attempt is retried (up to max_retries times) after a timeout, a
//   connection error, HTTP 408/429/5xx, or a malformed 2xx reply (not JSON,
//   no string choices[0].message.content). Other HTTP errors (401, 404, ...)
//   are not retried. Retry k (k = 0, 1, ...) waits backoff_s * 2^k seconds,
//   capped at kChatMaxBackoffS, plus up to 25% jitter drawn from an RNG seeded
//   by the request's hash and k (no global RNG); a Retry-After header
//   lengthens the wait (same cap).
// - At most max_concurrency HTTP requests are in flight at once on one client,
//   whichever thread sends them (complete_many, concurrent complete() calls,
//   probe()). Every method is thread-safe.
// - With cache_dir set, successful replies are cached on disk, one file per
//   request (net/request_cache.h): an identical request (model, messages,
//   temperature, max_tokens) is then answered without any HTTP request, also
//   by a later client on the same directory. Failures are never cached.
// - With `tools` set, requests carry them and a reply may be tool calls
//   (content null): ChatResult::tool_calls holds them (cached with the content).
// - The library reads no environment: the API key and the proxy are explicit
//   options (libcurl's own http_proxy handling is switched off).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tokenizer/chat_template.h"
#include "util/json_util.h"

namespace rlf {

// The longest wait before one retry, seconds (also caps Retry-After).
inline constexpr double kChatMaxBackoffS = 30.0;

// Messages are tokenizer/chat_template.h's ChatMessage (role, content): any
// bytes; invalid UTF-8 is sent as U+FFFD.

struct ChatClientOptions {
  std::string base_url;           // e.g. "http://127.0.0.1:8000/v1"; requests go to {base_url}/chat/completions; required
  std::string model;              // the request's "model" field; required
  std::string api_key;            // sent as "Authorization: Bearer <key>" when non-empty (callers read it from
                                  // the environment variable their config names; never logged, never cached)
  double timeout_s = 30;          // per attempt, connect + transfer, seconds
  int64_t max_retries = 3;        // retries after a failed attempt (so at most max_retries + 1 attempts)
  double backoff_s = 0.5;         // wait before retry k is backoff_s * 2^k seconds (+ jitter, capped at 30 s)
  int64_t max_concurrency = 4;    // HTTP requests in flight at once on this client
  double temperature = 0;         // the request's "temperature" field
  int64_t max_tokens = 256;       // the request's "max_tokens" field
  std::string cache_dir;          // "" = no cache; else replies are cached there (created if missing)
  std::string proxy;              // "" = connect directly; else a libcurl proxy URL ("http://host:3128")
  int64_t max_reply_bytes = 4 << 20;  // a longer reply body is a failed (malformed) attempt, bytes
  Json tools;                     // null = none; else OpenAI function schemas sent with every request
  std::string tool_choice;        // "" = the endpoint's default; else the request's "tool_choice" ("auto", "none")

  // Throws rlf::Error naming the field as `prefix` + key ("critic.endpoint." in
  // a run config): "critic.endpoint.timeout_s must be > 0 (got -1)".
  void validate(const std::string& prefix = "ChatClientOptions.") const;
};

struct ChatResult {
  bool ok = false;
  std::string content;    // the assistant message's content ("" is a valid reply: the caller decides)
  Json tool_calls = Json::array();  // with options.tools: the reply's tool calls ({id, type, function: {name, arguments}})
  std::string error;      // when !ok: why the last attempt failed
  int64_t attempts = 0;   // HTTP attempts made (0 when served from the cache)
  bool from_cache = false;
  double latency_s = 0;   // wall time of the whole call, retries and waits included, seconds
  double backoff_s = 0;   // waited before the retries (backoff, jitter, Retry-After), seconds
};

// Totals since the client was made (probe() not included).
struct ChatClientStats {
  int64_t n_requests = 0;            // complete() calls (each request of complete_many counts once)
  int64_t n_cache_hits = 0;          // requests answered from the cache
  int64_t n_failures = 0;            // requests that returned ok=false
  int64_t n_http_attempts = 0;       // HTTP requests sent
  int64_t n_retries = 0;             // HTTP requests sent after a failed attempt
  int64_t n_cache_write_errors = 0;  // replies that could not be written to the cache (the reply is still returned)
  std::string last_cache_write_error;  // why the last such write failed; "" = none
  double total_latency_s = 0;        // sum of ChatResult::latency_s
};

class ChatClient {
 public:
  // Validates `options` and creates cache_dir; throws rlf::Error when either fails.
  explicit ChatClient(ChatClientOptions options);
  ~ChatClient();
  ChatClient(const ChatClient&) = delete;
  ChatClient& operator=(const ChatClient&) = delete;

  // Asks for one completion (cache first, then HTTP with retries).
  ChatResult complete(const std::vector<ChatMessage>& messages);

  // complete() for every request on up to max_concurrency worker threads;
  // results in request order.
  std::vector<ChatResult> complete_many(const std::vector<std::vector<ChatMessage>>& requests);

  // Sends one tiny request (never cached, retried like any other) and throws
  // rlf::Error when it fails, so that a run stops at start-up rather than
  // hours later: "chat endpoint http://.../chat/completions (model 'm') refused
  // the probe request: HTTP 401: ... — the API key was rejected; <hint>".
  // `hint` names what the caller's user should check (default: the options).
  // A reply passes when it is JSON with a non-empty "choices" array (the
  // content may be cut short or null at so few tokens).
  void probe(const std::string& hint = "");

  ChatClientStats stats() const;
  const ChatClientOptions& options() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace rlf

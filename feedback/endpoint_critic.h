// Critiques from any OpenAI-compatible chat endpoint (net/chat_client.h):
// a system message and a user message from templates (feedback/critic.h
// placeholders), requests sent concurrently (client.max_concurrency), retried
// with back-off, cached on disk by request (client.cache_dir) so a resumed
// run does not pay twice.
//
// Start-up: with `probe`, the constructor sends one small request and throws
// rlf::Error when the endpoint refuses it (wrong URL, key, model), so a run
// stops at once, not after hours. During the run a failing request (timeout,
// HTTP error, malformed or empty reply) is a failed critique (ok = false,
// counted by the caller), never an exception.
#pragma once

#include <memory>

#include "feedback/critic.h"
#include "net/chat_client.h"

namespace rlf {

struct EndpointCriticOptions {
  ChatClientOptions client;   // base_url, model, api_key, timeout_s, max_retries, backoff_s, max_concurrency, cache_dir
  std::string system =
      "You are a careful teacher. You point out the first mistake in a student's answer, briefly, without "
      "giving away the final answer.";
  std::string prompt =
      "Problem:\n{prompt}\n\nStudent's answer:\n{response}\n\nReference answer: {reference}\n\n"
      "Point out the first mistake in at most three sentences. End with \"Verdict: correct\" or "
      "\"Verdict: incorrect\".";
  bool probe = true;          // send one request at start-up and fail early when it is refused

  void validate(const std::string& prefix) const;
};

class EndpointCritic final : public Critic {
 public:
  explicit EndpointCritic(EndpointCriticOptions options);
  std::string name() const override { return "endpoint"; }
  std::vector<Critique> critique(const std::vector<CritiqueRequest>& requests) override;

 private:
  EndpointCriticOptions options_;
  std::unique_ptr<ChatClient> client_;
};

}  // namespace rlf

// Critic: turns (task, response, reward result) into a critique — a text the
// policy can read, and optionally a verdict. Critiques feed critique-guided
// refinement (train/refinement.h) and any method that learns from words.
//
// Providers (feedback/critic_config.h, docs/feedback.md):
//   template  from the rewards' own explanation: "simple" (right or wrong),
//             "simple_gt" (+ the reference answer), "text" (what the rewards
//             said: "correct=0 (expected 42, got 41)") — Critique-GRPO's types
//   model     a model writes the critique from a prompt template: the policy
//             itself (self-critique) or another model directory
//   endpoint  any OpenAI-compatible chat endpoint (net/chat_client.h)
//
// Failures: a critic never throws for one request. A timeout, an error or an
// empty text comes back as Critique::ok = false with the reason; the caller
// leaves that sample an ordinary scalar-reward sample and counts it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "data/examples.h"
#include "feedback/critique_spans.h"

namespace rlf {

struct CritiqueRequest {
  const PromptExample* task = nullptr;  // the dataset record (reference answer, tests...); never null
  std::string prompt;                   // the prompt as the policy saw it
  std::string response;                 // what the policy wrote after it
  std::optional<double> reward;         // its total reward (unset: missing)
  bool correct = false;                 // by the run's accuracy reward (score > 0.5)
  std::string explanation;              // the rewards' own words (GroupScores::describe)
};

struct Critique {
  bool ok = false;                // false: no critique (see error)
  std::string text;               // the critique (ok only)
  std::optional<bool> verdict;    // the critic's judgement "correct?" (unset: it gave none)
  std::string error;              // why it failed ("timeout after 30 s", "empty critique", ...)
  double latency_s = 0;           // time spent on this request
  int64_t n_generated_tokens = 0; // tokens a local model generated for it (0 for templates and endpoints)
  // Spans of the response the critic marked (feedback/critique_spans.h): set
  // by critics that know the task; empty otherwise (a model's critique may
  // quote them: spans_from_critique).
  std::vector<CritiqueSpan> spans;
};

class Critic {
 public:
  virtual ~Critic() = default;
  // "simple", "simple_gt", "text", "model", "endpoint".
  virtual std::string name() const = 0;
  // One critique per request, in order. Must not throw for a failing request.
  virtual std::vector<Critique> critique(const std::vector<CritiqueRequest>& requests) = 0;
};

// Fills a template's {prompt} {response} {reference} {explanation} {reward}
// {verdict} ("correct"/"incorrect") placeholders from a request; {critique}
// from `critique`. Unknown placeholders are left as written. The one
// implementation every critic and the refinement prompt use.
std::string fill_feedback_template(const std::string& text, const CritiqueRequest& request,
                                   const std::string& critique = "");

// The placeholders fill_feedback_template knows, for config checks.
const std::vector<std::string>& feedback_placeholders();

// A critique from a critic's raw text: trimmed; empty is a failure ("empty
// critique"); the verdict read by parse_verdict. Every model-written critic uses it.
Critique critique_from_text(const std::string& text);

// Reads a verdict from a critique: the last line starting with "Verdict:"
// (any case) followed by "correct" or "incorrect"/"wrong". Unset otherwise.
std::optional<bool> parse_verdict(const std::string& critique);

}  // namespace rlf

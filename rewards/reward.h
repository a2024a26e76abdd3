// The reward interface: a Reward scores a group of completions of one prompt.
//
// Per completion it may return a scalar score (or none, with the reason it is
// missing: a crashed external scorer, a sandbox failure, an unparsable
// answer...), optional per-token rewards, and a short text explaining the
// score — critiques and reflections (later issues) build on that text.
// A failing reward affects only its own samples: implementations catch their
// own errors per completion and report them as missing scores.
//
// Rewards are created by name from a config table (rewards/registry.h), so a
// config can name any of them: [[reward]] type = "math", weight = 1.0, ...
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "util/json_util.h"

namespace rlf {

// One stretch of a multi-turn episode after its prompt.
struct TranscriptPart {
  std::string role;  // "policy" | "observation" | "feedback"
  std::string text;
};

// One completion (an episode after its prompt) to score.
struct RewardSample {
  std::string completion;               // the (last) policy turn's text (stop string and EOS removed)
  std::vector<int32_t> completion_ids;  // every token after the prompt (policy turns and observations)
  std::vector<uint8_t> policy_mask;     // [completion_ids] 1 on tokens the policy wrote, or empty (unknown)
  std::vector<int32_t> prompt_ids;      // the prompt's tokens as the policy saw them, or empty (unknown)
  std::string finish_reason;            // of the last turn: "stop" | "length"
  // Multi-turn episodes (env/): every turn and observation in order; empty
  // for a single-turn completion. Rewards that judge the whole trajectory
  // read this; single-turn rewards read `completion`.
  std::vector<TranscriptPart> turns;
  std::optional<double> env_reward;     // sum of the environment's step rewards (unset: none, or it failed)
  std::string env_missing_reason;       // why env_reward is unset (an environment error), "" otherwise
  std::string env_explanation;          // the environment's feedback texts, joined
};

// The completions of one prompt, with the prompt's dataset record.
struct RewardGroup {
  std::string prompt;                 // prompt text as the model saw it (after any chat template)
  std::string reference;              // reference answer/solution ("" when the dataset has none)
  Json record;                        // the whole dataset record (tests, keywords, metadata...)
  int64_t max_new_tokens = 0;         // the completion length limit used (for length penalties)
  std::vector<RewardSample> samples;  // the group (G completions)
};

struct RewardResult {
  std::optional<double> score;        // unset = missing (no gradient from this reward)
  std::string missing_reason;         // why the score is missing
  std::vector<float> token_rewards;   // optional, one per completion token (empty = none)
  std::string explanation;            // optional short text: why this score
};

// The one correctness rule: a score above `threshold` is correct, a missing
// score is not. Training decides at kCorrectThreshold (refinement, replay,
// distillation, lessons, curation, NFT's group accuracy, reflexion, turn
// verifiers); eval.correct_threshold may move it for an evaluation.
constexpr double kCorrectThreshold = 0.5;
inline bool is_correct(const std::optional<double>& score, double threshold = kCorrectThreshold) {
  return score && *score > threshold;
}

class Reward {
 public:
  virtual ~Reward() = default;
  // The name used in logs and metrics ("math", "format", ...).
  virtual std::string name() const = 0;
  // One result per sample, in order. Must not throw for a bad completion;
  // throws rlf::Error only for misuse (e.g. a record without the field it needs).
  virtual std::vector<RewardResult> score(const RewardGroup& group) = 0;
  // Checks at start-up, before any training step, that a dataset record has
  // what this reward needs (a reference answer, tests, keywords...); throws
  // rlf::Error naming `where` (file:line) and the missing field. Default: ok.
  virtual void check_record(const Json& record, const std::string& reference, const std::string& where) const {}
};

}  // namespace rlf

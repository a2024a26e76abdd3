// Environment: what the policy talks to during an episode.
//
//   reset(task)   -> the first observation (the prompt the policy sees)
//   step(turn)    -> observation text, reward, done, optional feedback text
//
// The episode producer (env/episode_producer.h) starts one session per
// episode with reset(), and after each policy turn calls the session's
// step() with that turn. Until step() says done, its observation is encoded
// and appended to the episode and the policy takes another turn.
//
// Today's single-turn prompt + reward is the one-step environment
// (env/single_turn_env.h): reset returns the dataset's prompt, step ends the
// episode at once and the rewards score the completion. Rewards that an
// environment gives per step (a game won, a tool error) become the reward
// component "env" (rewards/env_reward.h) and the per-turn rewards of
// turn-level credit (algorithms/credit.h).
//
// Failures: a session that throws rlf::Error from reset or step ends only
// that episode (end_reason "env_error", reward missing, the reason logged and
// counted); the run goes on. Sessions of one environment may be called from
// one thread at a time (the producer's).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "data/examples.h"
#include "util/json_util.h"

namespace rlf {

class Tokenizer;

// The policy's turn as the environment sees it.
struct PolicyTurn {
  int64_t turn = 0;           // 0-based
  std::string text;           // decoded turn (a stop string that ended it is not included)
  std::string stop;           // what ended it: "eos", the stop string, "id:N", or "" (token limit)
  bool truncated = false;     // ended by the turn's token limit
  std::vector<int32_t> token_ids;  // the turn's sampled ids (the EOS or stop string that ended it included)
};

struct EnvStep {
  std::string observation;              // appended before the next turn (ignored when done)
  bool observation_is_feedback = false; // the observation is feedback (a critique, "try again"), not world output
  std::optional<double> reward;         // reward of this step (unset = none)
  bool done = false;                    // the episode ends here
  std::string feedback;                 // optional text about the turn, kept with the episode (critics, logs)
  bool tool_call = false;               // the turn called a tool (metrics)
  bool tool_error = false;              // ... and the call failed (metrics)
  float turn_weight = 1.0f;             // loss weight of the turn just taken (0: not trained on; Reflect-Retry-
                                        // Reward trains the reflection only)
  std::optional<bool> correct;          // the turn was an answer, judged right or wrong (unset: not judged);
                                        // metrics only: accuracy per attempt, turns to solve
};

class EnvironmentSession {
 public:
  virtual ~EnvironmentSession() = default;
  // The environment's answer to one policy turn.
  virtual EnvStep step(const PolicyTurn& turn) = 0;
};

// One episode to start (Environment::reset_all).
struct ResetRequest {
  const PromptExample* task = nullptr;
  uint64_t seed = 0;  // the episode's own
};

// A started episode: its session and first observation, or why it could not start.
struct ResetResult {
  std::unique_ptr<EnvironmentSession> session;  // null when it failed
  std::string first_observation;
  std::string error;  // "" = started
};

class Environment {
 public:
  virtual ~Environment() = default;
  // The name in logs and config ("single_turn", "calculator", ...).
  virtual std::string name() const = 0;
  // Starts an episode of `task`; writes the first observation (the prompt
  // text, to be encoded as the episode's prompt) into *first_observation.
  // `seed` is the episode's own (for environments that draw at random).
  virtual std::unique_ptr<EnvironmentSession> reset(const PromptExample& task, uint64_t seed,
                                                    std::string* first_observation) = 0;
  // Starts several episodes (the producer's whole batch); results[i] is
  // requests[i]'s. An error ends only its own episode. Default: reset() for
  // each in turn. Environments whose start-up waits on outside programs
  // (agents) start them all at once, so their waits overlap.
  virtual std::vector<ResetResult> reset_all(const std::vector<ResetRequest>& requests) {
    std::vector<ResetResult> out(requests.size());
    for (size_t i = 0; i < requests.size(); ++i) {
      try {
        out[i].session = reset(*requests[i].task, requests[i].seed, &out[i].first_observation);
      } catch (const std::exception& e) {
        out[i].error = e.what();
      }
    }
    return out;
  }
  // True when sessions return step rewards (then the reward set gets the "env" component).
  virtual bool gives_rewards() const { return false; }
  // Checks at start-up that a dataset record has what the environment needs;
  // throws rlf::Error naming `where`. Default: ok.
  virtual void check_record(const PromptExample& task) const {}
  // True when every episode ends after its first turn (no observation is ever appended).
  virtual bool single_turn() const { return false; }
  // Called once by the episode producer before any reset, with the policy's
  // tokenizer (which outlives the environment): for environments that render
  // conversations or count tokens. Default: ignored.
  virtual void use_tokenizer(std::shared_ptr<const Tokenizer>) {}
  // Stop strings that end a policy turn for this environment (e.g. a tool
  // call's closing tag), added to the run's own stop strings.
  virtual std::vector<std::string> turn_stops() const { return {}; }
};

}  // namespace rlf

// A small multi-step text game with a verifiable goal: guess the secret
// number. Each turn the policy names a number; the environment answers
// "higher" or "lower" (observation) until the guess is right (reward
// win_reward, the episode ends) or the producer's max_turns is reached.
// A turn without a number gets "say a number" and counts as a wrong guess.
// Every step that is not a win gives -turn_penalty, so both the outcome and
// the number of turns carry credit: a game that needs more than one turn,
// for testing multi-turn and turn-level credit (algorithms/credit.h).
//
// Tasks: records with integer "secret", "low" and "high" (the data preset
// "guess", data/synthetic_tasks.h); the secret is part of the task, so every
// episode of a group plays the same game.
#pragma once

#include "env/environment.h"

namespace rlf {

struct GuessOptions {
  double win_reward = 1.0;     // reward of the step that names the secret
  double turn_penalty = 0.0;   // subtracted at every other step (>= 0)
};

class GuessEnvironment final : public Environment {
 public:
  explicit GuessEnvironment(GuessOptions options);
  std::string name() const override { return "guess"; }
  std::unique_ptr<EnvironmentSession> reset(const PromptExample& task, uint64_t seed,
                                            std::string* first_observation) override;
  bool gives_rewards() const override { return true; }
  void check_record(const PromptExample& task) const override;

 private:
  GuessOptions options_;
};

}  // namespace rlf

// The one-step environment: today's single-turn prompt + reward as an
// environment. reset() returns the dataset's prompt; step() ends the episode
// after the first turn with no reward of its own (the reward set scores the
// completion). Nothing about single-turn training changes for users: it is
// the default `[env] type = "single_turn"`.
#pragma once

#include "env/environment.h"

namespace rlf {

class SingleTurnEnvironment final : public Environment {
 public:
  std::string name() const override { return "single_turn"; }
  std::unique_ptr<EnvironmentSession> reset(const PromptExample& task, uint64_t seed,
                                            std::string* first_observation) override;
  bool single_turn() const override { return true; }
};

}  // namespace rlf

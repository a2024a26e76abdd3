#include "env/single_turn_env.h"

namespace rlf {

namespace {

class OneStep final : public EnvironmentSession {
 public:
  EnvStep step(const PolicyTurn&) override {
    EnvStep s;
    s.done = true;
    return s;
  }
};

}  // namespace

std::unique_ptr<EnvironmentSession> SingleTurnEnvironment::reset(const PromptExample& task, uint64_t,
                                                                 std::string* first_observation) {
  *first_observation = task.prompt;
  return std::make_unique<OneStep>();
}

}  // namespace rlf

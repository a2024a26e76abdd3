#include "env/try_again_env.h"

namespace rlf {

namespace {

class TryAgainSession final : public EnvironmentSession {
 public:
  TryAgainSession(const TryAgainOptions& o, const TurnVerifier& v, const PromptExample& task) : o_(o), v_(v), task_(task) {}
  EnvStep step(const PolicyTurn& turn) override {
    const TurnVerdict verdict = v_.judge(task_, turn.text);
    EnvStep s;
    s.feedback = verdict.explanation;
    s.correct = verdict.right;
    if (verdict.right) {
      s.done = true;
      return s;
    }
    s.observation = o_.message;
    s.observation_is_feedback = true;
    if (o_.turn_penalty > 0) s.reward = -o_.turn_penalty;
    return s;
  }

 private:
  const TryAgainOptions& o_;
  const TurnVerifier& v_;
  const PromptExample& task_;
};

}  // namespace

TryAgainEnvironment::TryAgainEnvironment(TryAgainOptions options, const std::string& where)
    : options_(std::move(options)), verifier_(options_.verifier, where) {}

std::unique_ptr<EnvironmentSession> TryAgainEnvironment::reset(const PromptExample& task, uint64_t,
                                                               std::string* first_observation) {
  *first_observation = task.prompt;
  return std::make_unique<TryAgainSession>(options_, verifier_, task);
}

}  // namespace rlf

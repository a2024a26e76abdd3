#include "env/reflect_retry_env.h"

#include "util/error.h"

namespace rlf {

namespace {

class Session final : public EnvironmentSession {
 public:
  Session(const ReflectRetryOptions& o, const TurnVerifier& v, const PromptExample& task)
      : o_(o), v_(v), task_(task) {}
  EnvStep step(const PolicyTurn& turn) override {
    EnvStep s;
    const bool reflection_only = o_.train == "reflection";
    if (turn.turn == 1) {  // the reflection: trained, followed by the retry prompt
      s.observation = o_.retry_message;
      s.observation_is_feedback = true;
      return s;
    }
    s.turn_weight = reflection_only ? 0.0f : 1.0f;
    const TurnVerdict verdict = v_.judge(task_, turn.text);
    s.feedback = verdict.explanation;
    if (turn.turn >= 2 || verdict.right) {
      s.done = true;
      return s;
    }
    s.observation = o_.reflect_message;
    s.observation_is_feedback = true;
    return s;
  }

 private:
  const ReflectRetryOptions& o_;
  const TurnVerifier& v_;
  const PromptExample& task_;
};

}  // namespace

void ReflectRetryOptions::validate() const {
  check(train == "reflection" || train == "all", "option 'train' must be \"reflection\" or \"all\" (got \"", train,
        "\")");
  check(!reflect_message.empty() && !retry_message.empty(),
        "options 'reflect_message' and 'retry_message' must not be empty");
}

ReflectRetryEnvironment::ReflectRetryEnvironment(ReflectRetryOptions options, const std::string& where)
    : options_(std::move(options)), verifier_(options_.verifier, where) {
  options_.validate();
}

std::unique_ptr<EnvironmentSession> ReflectRetryEnvironment::reset(const PromptExample& task, uint64_t,
                                                                   std::string* first_observation) {
  *first_observation = task.prompt;
  return std::make_unique<Session>(options_, verifier_, task);
}

}  // namespace rlf

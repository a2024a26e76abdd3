#include "env/reflect_retry_env.h"

#include <algorithm>
#include <cmath>

#include "util/error.h"
#include "util/text_similarity.h"

namespace rlf {

namespace {

class ReflectRetrySession final : public EnvironmentSession {
 public:
  ReflectRetrySession(const ReflectRetryOptions& o, const TurnVerifier& v, const PromptExample& task)
      : o_(o), v_(v), task_(task) {}
  EnvStep step(const PolicyTurn& turn) override {
    EnvStep s;
    const bool reflection_only = o_.train == "reflection";
    if (turn.turn == 0) first_answer_ = turn.text;
    if (turn.turn == 1) {  // the reflection: trained, followed by the retry prompt
      reflection_ = turn.text;
      s.observation = o_.retry_message;
      s.observation_is_feedback = true;
      return s;
    }
    s.turn_weight = reflection_only ? 0.0f : 1.0f;
    const TurnVerdict verdict = v_.judge(task_, turn.text);
    s.feedback = verdict.explanation;
    s.correct = verdict.right;
    if (turn.turn >= 2 || verdict.right) {
      s.done = true;
      if (turn.turn >= 2 && verdict.right && o_.reflection_bonus > 0)
        s.reward = reflection_quality_bonus(reflection_, first_answer_, o_);
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
  std::string first_answer_, reflection_;
};

}  // namespace

double reflection_quality_bonus(const std::string& reflection, const std::string& first_answer,
                                const ReflectRetryOptions& o) {
  const double concise =
      std::max(0.0, 1.0 - static_cast<double>(reflection.size()) / static_cast<double>(o.reflection_target_chars));
  const double novel = 1.0 - ngram_containment(reflection, first_answer, 3);
  return o.reflection_bonus * (concise + novel) / 2.0;
}

void ReflectRetryOptions::validate() const {
  check(train == "reflection" || train == "all", "option 'train' must be \"reflection\" or \"all\" (got \"", train,
        "\")");
  check(std::isfinite(reflection_bonus) && reflection_bonus >= 0, "option 'reflection_bonus' must be >= 0 (got ",
        reflection_bonus, "; 0 = off)");
  check(reflection_target_chars > 0, "option 'reflection_target_chars' must be > 0 (got ", reflection_target_chars,
        ")");
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
  return std::make_unique<ReflectRetrySession>(options_, verifier_, task);
}

}  // namespace rlf

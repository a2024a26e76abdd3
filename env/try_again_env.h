// Unary feedback over several turns ("A Simple 'Try Again'", Liu et al.
// 2025; docs/feedback.md): the policy answers; a wrong answer (judged by the
// verifier reward) gets a fixed message as feedback and another turn, up to
// env.max_turns. The run's rewards score the last answer; every wrong answer
// costs `turn_penalty` (a step reward of the environment: the reward
// component "env", present when turn_penalty > 0). Loss is on the policy's
// own turns only (the message is a feedback segment, weight 0).
//
//   [env]
//   type = "try_again"
//   max_turns = 3
//   message = "\nThat is not right. Try again.\n"
//   turn_penalty = 0.1
//   verifier = { type = "math", answer_format = "gsm8k" }
#pragma once

#include "env/environment.h"
#include "env/turn_verifier.h"

namespace rlf {

struct TryAgainOptions {
  std::string message = "\nThat is not right. Try again.\n";  // feedback after a wrong answer
  double turn_penalty = 0.0;   // step reward -turn_penalty for each wrong answer (>= 0)
  Json verifier = Json{{"type", "math"}, {"answer_format", "gsm8k"}};  // judges each answer
};

class TryAgainEnvironment final : public Environment {
 public:
  TryAgainEnvironment(TryAgainOptions options, const std::string& where);
  std::string name() const override { return "try_again"; }
  std::unique_ptr<EnvironmentSession> reset(const PromptExample& task, uint64_t seed,
                                            std::string* first_observation) override;
  bool gives_rewards() const override { return options_.turn_penalty > 0; }
  void check_record(const PromptExample& task) const override { verifier_.check_record(task); }

 private:
  TryAgainOptions options_;
  TurnVerifier verifier_;
};

}  // namespace rlf

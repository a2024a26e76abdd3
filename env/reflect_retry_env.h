// Reflect, retry, reward (Bensal et al. 2025; docs/feedback.md): after a
// wrong first answer (judged by the verifier reward) the policy is asked to
// reflect on it, then to try again with its reflection in context:
//
//   turn 0  answer        right: the episode ends
//   turn 1  reflection    after reflect_message (feedback)
//   turn 2  retry         after retry_message (feedback); the episode ends
//
// The run's rewards score the last turn (the retry). With train =
// "reflection" (the paper's) only the reflection's tokens carry loss: a
// successful retry rewards the reflection that led to it; an episode solved
// at the first attempt has no loss tokens and, having nothing to train,
// stays out of its group's baseline (train/rl_steps.h), so the group's
// advantages compare reflections with reflections. train = "all" trains
// every policy turn.
//
// reflection_bonus > 0 adds a reflection-quality reward (after SRPO, Wan et
// al. 2025; docs/feedback.md), given only when the retry is right, as a
// step reward of the environment (reward component "env"):
//
//   bonus = reflection_bonus * (concise + novel) / 2
//   concise = max(0, 1 - chars(reflection) / reflection_target_chars)
//   novel   = 1 - containment_3(reflection, first answer)
//
// containment_3: the share of the reflection's distinct word 3-grams found
// in the first answer (util/text_similarity.h) — a reflection that copies
// the wrong answer back scores 0 there.
//
//   [env]
//   type = "reflect_retry"
//   max_turns = 3
//   reflect_message = "\nThat is not right. Think about what went wrong.\n"
//   retry_message = "\nNow answer again.\n"
//   train = "reflection"
//   reflection_bonus = 0.0          # 0 = off
//   reflection_target_chars = 200
//   verifier = { type = "math", answer_format = "gsm8k" }
#pragma once

#include "env/environment.h"
#include "env/turn_verifier.h"

namespace rlf {

struct ReflectRetryOptions {
  std::string reflect_message = "\nThat is not right. Think about what went wrong.\n";
  std::string retry_message = "\nNow answer again.\n";
  std::string train = "reflection";  // reflection | all
  double reflection_bonus = 0.0;         // weight of the reflection-quality reward (>= 0; 0 = off)
  int64_t reflection_target_chars = 200; // a reflection this long or longer is not "concise" (> 0)
  Json verifier = Json{{"type", "math"}, {"answer_format", "gsm8k"}};

  void validate() const;  // names the option
};

// The bonus above for a right retry (the formula's one implementation).
double reflection_quality_bonus(const std::string& reflection, const std::string& first_answer,
                                const ReflectRetryOptions& o);

class ReflectRetryEnvironment final : public Environment {
 public:
  ReflectRetryEnvironment(ReflectRetryOptions options, const std::string& where);
  std::string name() const override { return "reflect_retry"; }
  std::unique_ptr<EnvironmentSession> reset(const PromptExample& task, uint64_t seed,
                                            std::string* first_observation) override;
  void check_record(const PromptExample& task) const override { verifier_.check_record(task); }
  bool gives_rewards() const override { return options_.reflection_bonus > 0; }

 private:
  ReflectRetryOptions options_;
  TurnVerifier verifier_;
};

}  // namespace rlf

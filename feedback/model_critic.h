// A model writes the critique: the policy itself (self-critique) or another
// model directory loaded beside it (sharing nothing with the policy but the
// process). The prompt is a template (feedback/critic.h placeholders), fitted
// to the model's context by the rule of feedback/feedback_prompt.h; the
// critique is the generated text up to a stop string or max_new_tokens.
//
// Deterministic: greedy by default; with temperature > 0 each request's seed
// is derived from `seed` and the request's own text, so a resumed run draws
// the same critiques.
//
// Critiques are generated through an episode producer (env/episode_producer.h,
// produce_from_ids: the fitted prompt's ids as given, one single-turn episode
// each) on the critic's model with critic.max_batch_rows rows: a producer of
// its own, not the rollouts', because its model may be another one and its
// batch rows are its own key (and with asynchronous rollouts the rollouts'
// producer samples from a copy of the policy, not from the policy).
#pragma once

#include <memory>

#include "env/episode_producer.h"
#include "env/single_turn_env.h"
#include "feedback/critic.h"
#include "rollout/policy.h"

namespace rlf {

struct ModelCriticOptions {
  // The critique prompt.
  std::string prompt =
      "{prompt}{response}\n\nCheck the answer above step by step. Say what is wrong, then end with "
      "\"Verdict: correct\" or \"Verdict: incorrect\".\n";
  int64_t max_new_tokens = 64;            // critique length limit (tokens)
  double temperature = 0.0;               // 0 = greedy
  std::vector<std::string> stop = {};     // stop strings ending the critique
  uint64_t seed = 0;
  bool add_special_tokens = true;         // BOS before the prompt
  int64_t max_batch_rows = 64;

  void validate(const std::string& prefix) const;
};

class ModelCritic final : public Critic {
 public:
  // Borrows `model` (the policy, or a model the caller loaded and keeps alive).
  ModelCritic(Policy& model, ModelCriticOptions options);
  std::string name() const override { return "model"; }
  std::vector<Critique> critique(const std::vector<CritiqueRequest>& requests) override;

 private:
  Policy& model_;
  ModelCriticOptions options_;
  SingleTurnEnvironment env_;  // the producer's environment (produce_from_ids starts no session)
  EpisodeProducer producer_;
};

}  // namespace rlf

// Critiques from templates over the rewards' own verdict and explanation
// (Critique-GRPO's critique types; docs/feedback.md):
//
//   simple     "The answer is incorrect." / "The answer is correct."
//   simple_gt  + " The correct answer is {reference}." when incorrect
//   text       + " {explanation}": what the rewards said, e.g.
//              "correct=0 (expected 46, got 45)"
//   template   the config's own texts (correct_text / incorrect_text) with
//              the placeholders of fill_feedback_template
//
// The verdict is the accuracy reward's (CritiqueRequest::correct). Cost:
// nothing; never fails, except "simple_gt" on a task without a reference
// answer (Critique::ok false, counted by the caller).
#pragma once

#include "feedback/critic.h"

namespace rlf {

struct TemplateCriticOptions {
  std::string kind = "simple_gt";  // simple | simple_gt | text | template
  std::string correct_text;        // template: the critique of a correct answer ("" = the kind's default)
  std::string incorrect_text;      // template: the critique of an incorrect answer

  // Throws rlf::Error naming `prefix` + key.
  void validate(const std::string& prefix) const;
};

class TemplateCritic final : public Critic {
 public:
  explicit TemplateCritic(TemplateCriticOptions options);
  std::string name() const override { return options_.kind; }
  std::vector<Critique> critique(const std::vector<CritiqueRequest>& requests) override;

 private:
  TemplateCriticOptions options_;
};

}  // namespace rlf

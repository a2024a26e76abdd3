#include "feedback/template_critic.h"

#include "util/error.h"

namespace rlf {

namespace {

constexpr const char* kCorrect = "The answer is correct.";
constexpr const char* kIncorrect = "The answer is incorrect.";

}  // namespace

void TemplateCriticOptions::validate(const std::string& prefix) const {
  check(kind == "simple" || kind == "simple_gt" || kind == "text" || kind == "template", prefix,
        "type must be one of simple, simple_gt, text, template, model, endpoint (got \"", kind, "\")");
  if (kind == "template")
    check(!incorrect_text.empty(), prefix, "incorrect_text is required for type = \"template\" (e.g. ",
          "incorrect_text = \"Wrong: {explanation}\")");
}

TemplateCritic::TemplateCritic(TemplateCriticOptions options) : options_(std::move(options)) {
  options_.validate("critic.");
}

std::vector<Critique> TemplateCritic::critique(const std::vector<CritiqueRequest>& requests) {
  std::vector<Critique> out(requests.size());
  for (size_t i = 0; i < requests.size(); ++i) {
    const CritiqueRequest& r = requests[i];
    Critique& c = out[i];
    c.verdict = r.correct;
    const std::string& kind = options_.kind;
    if (kind == "template") {
      const std::string& t = r.correct ? (options_.correct_text.empty() ? std::string(kCorrect) : options_.correct_text)
                                       : options_.incorrect_text;
      c.text = fill_feedback_template(t, r);
    } else if (r.correct) {
      c.text = kCorrect;
    } else {
      c.text = kIncorrect;
      if (kind == "simple_gt") {
        if (r.task->reference.empty()) {
          c.error = "simple_gt: the task has no reference answer";
          continue;
        }
        c.text += " The correct answer is " + r.task->reference + ".";
      } else if (kind == "text" && !r.explanation.empty()) {
        c.text += " " + r.explanation;
      }
    }
    c.ok = !c.text.empty();
    if (!c.ok) c.error = "empty critique";
  }
  return out;
}

}  // namespace rlf

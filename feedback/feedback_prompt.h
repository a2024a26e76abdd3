// Feedback prompts that fit the context. A critique prompt (the critic sees
// the task and the response) or a refinement prompt (the policy sees the
// task, its response and the critique) may not fit the model's context once
// feedback is added. The rule, the same everywhere (docs/feedback.md):
//
//   1. the template filled as is, when it fits;
//   2. else {response} cut from its start, keeping its end (where answers
//      are) after "...", as much as fits;
//   3. else, with no response left, {critique} cut from its end;
//   4. else nothing: the caller skips the request and counts it.
//
// The task's prompt is never cut. "Fits" means the encoded prompt plus
// `room` tokens (what will be generated after it) is at most `max_tokens`.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "feedback/critic.h"
#include "tokenizer/tokenizer.h"

namespace rlf {

struct FittedPrompt {
  std::string text;              // the filled template
  std::vector<int32_t> ids;      // its encoding
  bool truncated = false;        // rule 2 or 3 applied
};

std::optional<FittedPrompt> fit_feedback_prompt(const std::string& template_text, const CritiqueRequest& request,
                                                const std::string& critique, const Tokenizer& tokenizer,
                                                bool add_special, int64_t room, int64_t max_tokens);

}  // namespace rlf

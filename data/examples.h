// The records every data source yields (JSONL files and the synthetic
// generators alike): a prompt example for RL, and a (prompt, response) pair
// for supervised fine-tuning.
#pragma once

#include <string>
#include <vector>

#include "util/json_util.h"

namespace rlf {

struct PromptExample {
  std::string id;          // the id field's value, else "<file stem>:<line>" or "<task>:<index>"
  std::string raw_prompt;  // the prompt field as written in the record
  std::string prompt;      // the text the model sees (prompt_template and chat format applied)
  std::string reference;   // reference answer/solution text ("" when the record has none)
  Json record;             // the whole record, for rewards (tests, keywords, numbers...)
  std::string where;       // its origin for messages: "'path' line N" or "arithmetic #N"
};

// One stretch of a multi-turn SFT target: a policy turn (trained on) or an
// observation the environment would append (never trained on).
struct SftTurn {
  bool policy = true;
  std::string text;
};

struct SftExample {
  std::string id;          // as PromptExample::id
  std::string raw_prompt;  // the prompt field as written
  std::string prompt;      // the text the model sees, ending where the response starts
  std::string response;    // the target text (no end-of-turn/EOS token: the trainer appends it)
  bool correct = true;     // synthetic pairs: false for deliberately wrong responses
  std::string where;       // origin, as PromptExample::where
  // Multi-turn targets (e.g. a tool call, its result, the answer): when not
  // empty, `response` is their concatenation and the trainer tokenizes each
  // stretch on its own, as the rollout engine would see it, with loss weight
  // 0 on observations.
  std::vector<SftTurn> turns;
};

}  // namespace rlf

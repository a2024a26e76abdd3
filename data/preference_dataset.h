// Preference data: (prompt, chosen, rejected) triples for the DPO family
// (trainer.kind = "dpo"), reward models and their evaluation.
//
//   generic     a JSONL/JSONL.gz file with fields "prompt", "chosen" and
//               "rejected" (names configurable); the prompt is rendered as
//               the prompt and SFT datasets render theirs (prompt_template,
//               system_prompt, chat_template), so all three see one text
//   hh-rlhf     Anthropic HH-RLHF records {"chosen": "\n\nHuman: ...
//               \n\nAssistant: ...", "rejected": ...}: the prompt is the
//               dialogue both share up to and including the last
//               "\n\nAssistant:" they have in common; chosen and rejected
//               are the rest
//   arithmetic  generated (data/synthetic_tasks.h): the chosen response is
//               the worked correct answer ("37 + 48 = 85. #### 85"), the
//               rejected one a wrong answer of `wrong_style` (offset: off by
//               1..10; drop_carry: worked without carries), so a policy that
//               prefers chosen over rejected has learnt arithmetic. With
//               `rated`, pairs carry per-attribute ratings for multi-objective
//               reward models (correct, worked, short): each prompt asks for
//               one style (" Show your work." or " Answer only.", seeded per
//               problem), the chosen response is right in that style, the
//               rejected one either right in the other style or wrong in the
//               asked one (seeded, half each) — so which attribute decides a
//               pair depends on the prompt (what ArmoRM's gating learns)
//
// Ratings (multi-objective reward models, trainer.kind = "rm" with
// reward_model.attributes): a generic record may carry "chosen_ratings" and
// "rejected_ratings", objects of attribute name -> number; an attribute a
// record does not rate is missing (no loss there).
//
// The last eval_size pairs (after the optional shuffle) are held out: the
// preference accuracy before and after training is measured on them.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "data/prompt_format.h"
#include "data/synthetic_tasks.h"
#include "util/json_util.h"

namespace rlf {

struct PreferenceExample {
  std::string id;          // "<file>:<line>" or "arithmetic:<index>"
  std::string prompt;      // the text the model sees, ending where a response starts
  std::string chosen;      // the preferred response (no EOS: the trainer appends it)
  std::string rejected;    // the other one
  std::string where;       // origin, for messages
  std::map<std::string, double> chosen_ratings;    // attribute -> rating of `chosen` (may be empty)
  std::map<std::string, double> rejected_ratings;  // of `rejected`
};

struct PreferenceDatasetOptions {
  std::string path;                 // JSONL or JSONL.gz file; "" for preset arithmetic
  std::string preset = "generic";   // generic | hh-rlhf | arithmetic
  std::string prompt_field = "prompt";
  std::string chosen_field = "chosen";
  std::string rejected_field = "rejected";
  std::string system_prompt;        // as PromptDatasetOptions (generic)
  std::string chat_template;        // as PromptDatasetOptions (generic, arithmetic)
  std::string prompt_template;      // "" = the preset's ({prompt} for generic)
  bool shuffle = false;             // shuffle once at load (before max_records and the eval split)
  uint64_t seed = 0;                // seeds the shuffle and the generator
  int64_t max_records = 0;          // keep at most this many pairs (0 = all)
  int64_t eval_size = 0;            // pairs held out for the preference accuracy (< the number of pairs)
  std::string on_bad_record = "error";  // "error" | "skip" (a record missing a field, or chosen == rejected)
  std::string wrong_style = "offset";   // arithmetic: how the rejected answer is wrong ("offset" | "drop_carry")
  bool worked = true;               // arithmetic: "37 + 48 = 85. #### 85" (true) or "#### 85"
  bool rated = false;               // arithmetic: style-asking prompts and ratings (correct, worked, short)
  ArithmeticOptions arithmetic;     // preset arithmetic
  CountdownOptions countdown;       // (unused; shared dataset keys)
};

class PreferenceDataset {
 public:
  // Throws rlf::Error naming the file, line and field on bad input.
  static PreferenceDataset load(const PreferenceDatasetOptions& options, const TokenizerChat* tokenizer = nullptr);

  const std::vector<PreferenceExample>& train() const { return train_; }
  const std::vector<PreferenceExample>& eval() const { return eval_; }
  size_t n_skipped() const { return n_skipped_; }
  std::string summary() const { return summary_; }

 private:
  std::vector<PreferenceExample> train_, eval_;
  size_t n_skipped_ = 0;
  std::string summary_;
};

// Options from a config table ([preference.data]); unknown keys and wrong
// types are errors naming `source` and the key.
PreferenceDatasetOptions preference_dataset_options_from_json(const Json& table, const std::string& source);

// HH-RLHF's split of two full dialogues into (prompt, chosen, rejected); throws
// rlf::Error (naming `where`) when they share no "\n\nAssistant:" turn.
PreferenceExample split_shared_dialogue(const std::string& chosen, const std::string& rejected, const std::string& where);

}  // namespace rlf

// Step-labelled solutions for process reward models (trainer.kind = "rm"
// with [process.data]): a prompt, a solution as a list of steps, and a label
// per step in [0, 1] (1 = the step is right; PRM800K-style 0/1 labels, or
// Math-Shepherd-style Monte-Carlo estimates: the share of rollouts from the
// step that reach the right answer).
//
//   generic     a JSONL/JSONL.gz file with fields "prompt", "steps" (an
//               array of strings) and "labels" (an array of numbers in
//               [0, 1], one per step); field names configurable; the prompt
//               is rendered as the other datasets render theirs
//   arithmetic  generated: chained sums "What is a + b + c?" solved one
//               addition per step ("a + b = s", "s + c = t", "#### t");
//               with probability wrong_fraction one addition is off by 1..10
//               and the rest of the solution carries the wrong value on,
//               labelled as PRM800K does: 1 before the first wrong step, 0
//               from it on
//
// The response is the steps joined by `delimiter` (rm/process_reward.h
// finds each step's last token by it). The last eval_size solutions are
// held out.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "data/prompt_format.h"
#include "data/synthetic_tasks.h"
#include "util/json_util.h"

namespace rlf {

struct StepExample {
  std::string id;                  // "<file>:<line>" or "chain:<index>"
  std::string prompt;              // the text the model sees, ending where the solution starts
  std::vector<std::string> steps;  // the solution, step by step (not empty)
  std::vector<double> labels;      // [steps] in [0, 1]; empty when the record had none (labels_optional)
  std::string reference;           // arithmetic: the right final answer ("" for files)
  std::string where;               // origin, for messages
  // The solution as the model reads it: the steps joined by `delimiter`.
  std::string response(const std::string& delimiter) const;
};

struct StepDatasetOptions {
  std::string path;                 // JSONL or JSONL.gz file; "" for preset arithmetic
  std::string preset = "generic";   // generic | arithmetic
  std::string prompt_field = "prompt";
  std::string steps_field = "steps";
  std::string labels_field = "labels";
  std::string reference_field = "reference";  // optional: the right final answer (Monte-Carlo labels score against it)
  bool labels_optional = false;     // a record may lack labels (empty StepExample::labels): process.labels =
                                    // "monte_carlo" estimates them
  std::string delimiter = "\n";     // between steps (must not be empty)
  std::string system_prompt;        // as PromptDatasetOptions
  std::string chat_template;
  std::string prompt_template;      // "" = the preset's ({prompt} for generic)
  bool shuffle = false;             // shuffle once at load (before max_records and the eval split)
  uint64_t seed = 0;                // seeds the shuffle and the generator
  int64_t max_records = 0;          // keep at most this many solutions (0 = all)
  int64_t eval_size = 0;            // solutions held out (< the number of solutions)
  std::string on_bad_record = "error";  // "error" | "skip"
  int64_t n_terms = 3;              // arithmetic: numbers summed per problem (2..8)
  double wrong_fraction = 0.5;      // arithmetic: share of solutions with a wrong step
  ArithmeticOptions arithmetic;     // arithmetic: n_problems, min_digits, max_digits (operations unused)
  CountdownOptions countdown;       // (unused; shared dataset keys)
};

class StepDataset {
 public:
  // Throws rlf::Error naming the file, line and field on bad input.
  static StepDataset load(const StepDatasetOptions& options, const TokenizerChat* tokenizer = nullptr);

  const std::vector<StepExample>& train() const { return train_; }
  const std::vector<StepExample>& eval() const { return eval_; }
  size_t n_skipped() const { return n_skipped_; }
  std::string summary() const { return summary_; }

 private:
  std::vector<StepExample> train_, eval_;
  size_t n_skipped_ = 0;
  std::string summary_;
};

// Options from a config table ([process.data]); unknown keys and wrong types
// are errors naming `source` and the key.
StepDatasetOptions step_dataset_options_from_json(const Json& table, const std::string& source);

}  // namespace rlf

// Prompt datasets for RL: records from a JSONL/JSONL.gz file (or a synthetic
// generator), mapped to (prompt, reference, record), formatted for the model,
// optionally shuffled and cut, and split into train and eval sets.
//
// A two-line config loads a known dataset: path = ".../gsm8k/train.jsonl",
// preset = "gsm8k". Presets set the field mapping and a prompt template that
// asks for the answer in the form the reward reads (docs/data.md lists them);
// any field set explicitly overrides the preset.
//
// Loading order: read (bad records: error or skip) -> shuffle (if set) ->
// max_records -> split (eval is a seeded random subset, kept in load order;
// train is the rest, in load order). Everything is deterministic by `seed`.
// Batches over train() come from a DataCursor (data/data_cursor.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "data/examples.h"
#include "data/prompt_format.h"
#include "data/synthetic_tasks.h"

namespace rlf {

struct PromptDatasetOptions {
  std::string path;               // JSONL or JSONL.gz file; "" for the synthetic presets
  std::string preset = "generic";  // generic | gsm8k | math500 | arithmetic | countdown | guess
  std::string prompt_field;       // "" = the preset's (generic: first present of prompt, question, problem)
  std::string reference_field;    // "" = the preset's (generic: first present of answer, solution, reference, or none)
  std::string id_field;           // "" = the preset's; none: ids are "<file name>:<line>"
  std::string system_prompt;      // "" = none
  std::string chat_template;      // "" = no chat markup, "auto" = the tokenizer's, or a format name
  std::string prompt_template;    // "" = the preset's; "{prompt}" and "{field}" are substituted
  bool shuffle = false;           // shuffle the records once at load (before max_records and the split)
  uint64_t seed = 0;              // seeds the shuffle, the split and the synthetic generators
  double eval_fraction = 0.0;     // share of records held out for eval, in [0, 1); rounded to nearest
  int64_t eval_size = 0;          // or: number of records held out (not both)
  int64_t max_records = 0;        // keep at most this many records (0 = all)
  std::string on_bad_record = "error";  // "error" stops at a bad line; "skip" skips and counts it
  ArithmeticOptions arithmetic;   // preset "arithmetic"
  CountdownOptions countdown;     // preset "countdown"
  GuessTaskOptions guess;         // preset "guess"
};

// The field mapping and template a preset stands for.
struct DatasetPreset {
  std::string name;
  std::string prompt_field;     // "" = try prompt, question, problem
  std::string reference_field;  // "" = try answer, solution, reference (optional)
  std::string id_field;         // "" = none
  std::string prompt_template;
  bool synthetic = false;       // generated, no file
};

// The preset called `name`; throws rlf::Error listing the known ones.
const DatasetPreset& find_dataset_preset(const std::string& name);
const std::vector<DatasetPreset>& dataset_presets();

class PromptDataset {
 public:
  // Loads and splits. `tokenizer` is needed for chat_template = "auto".
  // Throws rlf::Error naming the file, line and field on bad input.
  static PromptDataset load(const PromptDatasetOptions& options, const TokenizerChat* tokenizer = nullptr);

  const std::vector<PromptExample>& train() const { return train_; }
  const std::vector<PromptExample>& eval() const { return eval_; }

  // Records skipped with on_bad_record = "skip" (a metric), and the first
  // few messages saying why.
  size_t n_skipped() const { return n_skipped_; }
  const std::vector<std::string>& skipped_examples() const { return skipped_examples_; }

  // One line for logs: "gsm8k 'path': 7473 records (7373 train, 100 eval), 0 skipped".
  std::string summary() const { return summary_; }

 private:
  std::vector<PromptExample> train_;
  std::vector<PromptExample> eval_;
  size_t n_skipped_ = 0;
  std::vector<std::string> skipped_examples_;
  std::string summary_;
};

// Options from a config table ({"path": ..., "preset": ..., "arithmetic": {...}});
// an unknown key or a wrong type is an error naming `source` and the key.
PromptDatasetOptions prompt_dataset_options_from_json(const Json& table, const std::string& source);

}  // namespace rlf

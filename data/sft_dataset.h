// SFT data: (prompt, response) pairs for supervised fine-tuning, e.g. the
// warm start before RL. From a JSONL/JSONL.gz file (fields "prompt" and
// "response" unless configured), or generated from a synthetic task
// (preset "arithmetic" or "countdown", see data/synthetic_tasks.h) with a
// chosen share of wrong responses.
//
// Prompts are rendered exactly as PromptDataset renders them (same
// prompt_template, system_prompt and chat_template semantics and the same
// preset templates), so use the RL dataset's settings here too: the model
// must see the same prompt text in SFT and RL. The response is the raw
// target text; the trainer appends the end-of-turn/EOS token.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "data/examples.h"
#include "data/prompt_format.h"
#include "data/synthetic_tasks.h"

namespace rlf {

struct SftDatasetOptions {
  std::string path;                 // JSONL or JSONL.gz file; "" for the synthetic presets
  std::string preset = "generic";   // generic (a file) | arithmetic | countdown
  std::string prompt_field = "prompt";      // field holding the prompt
  std::string response_field = "response";  // field holding the target response
  std::string system_prompt;        // as PromptDatasetOptions
  std::string chat_template;        // as PromptDatasetOptions ("" | "auto" | a format name)
  std::string prompt_template;      // "" = the preset's
  bool shuffle = false;             // shuffle once at load (before max_records)
  uint64_t seed = 0;                // seeds the shuffle, the generator and the wrong responses
  int64_t max_records = 0;          // keep at most this many pairs (0 = all)
  std::string on_bad_record = "error";  // "error" | "skip"
  double wrong_fraction = 0.0;      // synthetic presets: share of deliberately wrong responses, in [0, 1]
  bool worked = true;               // synthetic arithmetic: "37 + 48 = 85. #### 85" (true) or "#### 85"
  bool columns = false;             // synthetic arithmetic '+': worked column by column ("7+8=15, 3+4+1=8. #### 85";
                                    //   data/synthetic_tasks.h), wrong ones with their carries dropped
  std::string wrong_style = "offset";  // synthetic presets: "offset" | "drop_carry" (data/synthetic_tasks.h)
  double tool_fraction = 0.0;       // synthetic arithmetic: share of responses that call the calculator tool
                                    //   (multi-turn targets, data/synthetic_tasks.h)
  CalculatorSyntax calculator;      // synthetic arithmetic tool targets: tool_call_open/close (around "a*b") and
                                    //   tool_result_open/close (around the value); default <calc>, <result>
  double feedback_fraction = 0.0;   // synthetic arithmetic: share of targets "wrong answer, feedback, right answer"
  std::string feedback_text = "\nThat is not right. Try again.\n";  // the feedback there ({answer}, {prompt},
                                    //   {critique}: the run's [critic] on the wrong answer)
  std::string feedback_prefix;      // synthetic presets: "" = none; else before every prompt, {critique} = the
                                    //   run's [critic] on the target's answer (offline feedback-conditional
                                    //   targets, FCP's warm start; data/synthetic_tasks.h)
  // Not a config key: the run sets it from [critic] when feedback_text or feedback_prefix has {critique}
  // (train/run_context.cpp).
  std::function<std::string(const PromptExample& problem, const std::string& wrong_response)> critique;
  int64_t draws = 1;                // synthetic presets: responses per problem, each with its own wrong/tool/feedback
                                    //   choices (a demonstrator's habit rather than fixed wrong problems)
  ArithmeticOptions arithmetic;     // preset "arithmetic"
  CountdownOptions countdown;       // preset "countdown"
};

class SftDataset {
 public:
  // Throws rlf::Error naming the file, line and field on bad input.
  static SftDataset load(const SftDatasetOptions& options, const TokenizerChat* tokenizer = nullptr);

  const std::vector<SftExample>& examples() const { return examples_; }
  size_t n_skipped() const { return n_skipped_; }  // with on_bad_record = "skip"
  const std::vector<std::string>& skipped_examples() const { return skipped_examples_; }
  std::string summary() const { return summary_; }  // one line for logs

 private:
  std::vector<SftExample> examples_;
  size_t n_skipped_ = 0;
  std::vector<std::string> skipped_examples_;
  std::string summary_;
};

// Options from a config table (keys as the fields above); unknown keys and
// wrong types are errors naming `source` and the key.
SftDatasetOptions sft_dataset_options_from_json(const Json& table, const std::string& source);

// The examples whose prompt is not the prompt, and whose raw prompt not the
// raw prompt, of any `held_out` example (keeps an eval split held out from an
// SFT warm start however either renders it), in order.
std::vector<SftExample> without_held_out_prompts(const std::vector<SftExample>& examples,
                                                 const std::vector<PromptExample>& held_out);

}  // namespace rlf

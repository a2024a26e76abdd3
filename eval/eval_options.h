// EvalOptions: how an evaluation samples and what counts as correct — the
// [eval] table of a config and the flags of `rlf eval`.
//
// Sampling: n_samples completions per prompt (k in pass@k), at `temperature`
// (unset = greedy for one sample, 1.0 for several), deterministic by `seed`.
// Correctness: a sample is correct when the accuracy reward component
// (`accuracy_reward`, "" = the first component) scores above
// `correct_threshold`.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "config/config_binding.h"
#include "rewards/reward.h"
#include "rollout/sampling.h"
#include "util/json_util.h"

namespace rlf {

struct EvalOptions {
  int64_t n_samples = 1;                  // completions per prompt (n of pass@k); >= 1
  std::optional<double> temperature;      // unset = 0 (greedy) when n_samples = 1, else 1.0
  int64_t top_k = 0;                      // keep the k most likely tokens; 0 = off
  double top_p = 1.0;                     // nucleus mass, (0, 1]; 1 = off
  double min_p = 0.0;                     // drop tokens below min_p * p_max, [0, 1]; 0 = off
  int64_t max_new_tokens = 256;           // completion length limit (tokens)
  std::vector<std::string> stop;          // stop strings (excluded from the text the rewards see)
  int64_t max_prompts = 0;                // evaluate the first N prompts only; 0 = all
  uint64_t seed = 0;                      // seeds every sample: same seed, same completions
  std::string accuracy_reward;            // component deciding correctness; "" = the first one
  double correct_threshold = kCorrectThreshold;        // score > threshold counts as correct
  std::string best_of;                    // a reward component that picks one sample per prompt (best-of-n with a
                                          // reward model, a judge...): best_of_n = share of picks that are correct;
                                          // "" = off
  std::string answer_format = "auto";     // answer extraction for maj@k: auto | gsm8k | boxed | answer_is | last_number
  bool add_special_tokens = true;         // encode prompts with the tokenizer's BOS (false when the chat template writes it)
  int64_t max_batch_rows = 64;            // sequences the rollout engine decodes together
  int64_t prompts_per_call = 0;           // prompts per generate() call (progress granularity); 0 = all at once

  // The temperature in effect (the rule above).
  double effective_temperature() const;
  // The sampling parameters of every request (without a seed).
  SamplingParams sampling() const;
  // Throws rlf::Error naming the field ("eval.n_samples = 0: must be >= 1").
  void validate() const;
};

// The [eval] table's keys ("eval.<field>"), each bound to its EvalOptions
// member; defaults from EvalOptions{}. `temperature` is type any: a number >= 0
// or "auto".
const ConfigBindings<EvalOptions>& eval_option_bindings();

// Their schema.
const ConfigSchema& eval_options_schema();

// EvalOptions from an [eval] table (missing keys take their defaults);
// validates. `source` names the config in errors.
EvalOptions eval_options_from_json(const Json& table, const std::string& source);

}  // namespace rlf

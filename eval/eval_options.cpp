// EvalOptions: derived values, validation and the [eval] config table.
#include "eval/eval_options.h"

#include <cmath>

#include "rewards/exact_match.h"
#include "util/error.h"

namespace rlf {

double EvalOptions::effective_temperature() const {
  if (temperature) return *temperature;
  return n_samples == 1 ? 0.0 : 1.0;
}

SamplingParams EvalOptions::sampling() const {
  SamplingParams p;
  p.temperature = effective_temperature();
  p.top_k = top_k;
  p.top_p = top_p;
  p.min_p = min_p;
  p.max_new_tokens = max_new_tokens;
  p.stop_strings = stop;
  return p;
}

void EvalOptions::validate() const {
  const char* at = "eval option ";
  check(n_samples >= 1, at, "n_samples = ", n_samples, ": must be >= 1 (completions per prompt)");
  check(!temperature || (std::isfinite(*temperature) && *temperature >= 0), at, "temperature = ", temperature.value_or(0),
        ": must be >= 0 (0 = greedy), or unset for auto");
  check(top_k >= 0, at, "top_k = ", top_k, ": must be >= 0 (0 = off)");
  check(std::isfinite(top_p) && top_p > 0 && top_p <= 1, at, "top_p = ", top_p, ": must be in (0, 1] (1 = off)");
  check(std::isfinite(min_p) && min_p >= 0 && min_p <= 1, at, "min_p = ", min_p, ": must be in [0, 1] (0 = off)");
  check(max_new_tokens >= 1, at, "max_new_tokens = ", max_new_tokens, ": must be >= 1");
  for (const std::string& s : stop) check(!s.empty(), at, "stop: stop strings must not be empty");
  check(max_prompts >= 0, at, "max_prompts = ", max_prompts, ": must be >= 0 (0 = all prompts)");
  check(std::isfinite(correct_threshold), at, "correct_threshold = ", correct_threshold, ": must be a finite number");
  with_context(str(at, "answer_format = '", answer_format, "'"), [&] { parse_reward_answer_format(answer_format); });
  check(max_batch_rows >= 1, at, "max_batch_rows = ", max_batch_rows, ": must be >= 1");
  check(prompts_per_call >= 0, at, "prompts_per_call = ", prompts_per_call, ": must be >= 0 (0 = all at once)");
}

const ConfigBindings<EvalOptions>& eval_option_bindings() {
  static const ConfigBindings<EvalOptions> bindings = {
      field("eval.n_samples", "samples", "completions per prompt (the n of pass@k)", RLF_MEMBER(n_samples)),
      bind("eval.temperature", OptionType::Any, "",
           "sampling temperature, >= 0 (0 = greedy); \"auto\" = 0 when n_samples = 1, else 1.0",
           [](const EvalOptions& o) { return o.temperature ? Json(*o.temperature) : Json("auto"); },
           [](EvalOptions& o, const Json& v, const std::string& source) {
             if (v.is_number()) {
               o.temperature = v.get<double>();
             } else {
               check(v.is_string() && v.get<std::string>() == "auto", source,
                     ": key 'eval.temperature' must be a number >= 0 or \"auto\", got ", v.dump());
             }
           }),
      field("eval.top_k", "tokens", "keep the k most likely tokens; 0 = off", RLF_MEMBER(top_k)),
      field("eval.top_p", "", "nucleus sampling mass, (0, 1]; 1 = off", RLF_MEMBER(top_p)),
      field("eval.min_p", "", "drop tokens below min_p times the top probability; 0 = off", RLF_MEMBER(min_p)),
      field("eval.max_new_tokens", "tokens", "completion length limit", RLF_MEMBER(max_new_tokens)),
      field("eval.stop", "", "stop strings (cut from the text the rewards see)", RLF_MEMBER(stop)),
      field("eval.max_prompts", "prompts", "evaluate the first N prompts of the split; 0 = all", RLF_MEMBER(max_prompts)),
      field("eval.seed", "", "seeds every sample: the same seed gives the same completions", RLF_MEMBER(seed)),
      field("eval.accuracy_reward", "", "reward component that decides correctness; \"\" = the first [[reward]]",
            RLF_MEMBER(accuracy_reward)),
      field("eval.correct_threshold", "score", "a sample is correct when the accuracy component scores above this",
            RLF_MEMBER(correct_threshold)),
      field("eval.best_of", "",
            "reward component that picks each prompt's best sample (its highest score; the first on ties): best_of_n "
            "is the share of picks that are correct; \"\" = off",
            RLF_MEMBER(best_of)),
      field("eval.answer_format", "", "answer extraction for maj@k votes", RLF_MEMBER(answer_format),
            {"auto", "gsm8k", "boxed", "answer_is", "last_number"}),
      field("eval.add_special_tokens", "", "encode prompts with the tokenizer's BOS; false when the chat template writes it",
            RLF_MEMBER(add_special_tokens)),
      field("eval.max_batch_rows", "sequences", "sequences decoded together", RLF_MEMBER(max_batch_rows)),
      field("eval.prompts_per_call", "prompts",
            "prompts per generation call (progress is reported between calls); 0 = all at once",
            RLF_MEMBER(prompts_per_call)),
  };
  return bindings;
}

const ConfigSchema& eval_options_schema() {
  static const ConfigSchema schema = schema_of(eval_option_bindings());
  return schema;
}

EvalOptions eval_options_from_json(const Json& t, const std::string& source) {
  EvalOptions o;
  const Json config = validate_config({{"eval", t}}, eval_options_schema(), source);
  apply_bindings(eval_option_bindings(), config, o, source);
  with_context(source, [&] { o.validate(); });
  return o;
}

}  // namespace rlf

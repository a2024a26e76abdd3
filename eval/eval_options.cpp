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

const ConfigSchema& eval_options_schema() {
  static const ConfigSchema schema = [] {
    const EvalOptions d;
    return ConfigSchema{
        {"eval.n_samples", OptionType::Int, d.n_samples, "samples", "completions per prompt (the n of pass@k)"},
        {"eval.temperature", OptionType::Any, "auto", "",
         "sampling temperature, >= 0 (0 = greedy); \"auto\" = 0 when n_samples = 1, else 1.0"},
        {"eval.top_k", OptionType::Int, d.top_k, "tokens", "keep the k most likely tokens; 0 = off"},
        {"eval.top_p", OptionType::Float, d.top_p, "", "nucleus sampling mass, (0, 1]; 1 = off"},
        {"eval.min_p", OptionType::Float, d.min_p, "", "drop tokens below min_p times the top probability; 0 = off"},
        {"eval.max_new_tokens", OptionType::Int, d.max_new_tokens, "tokens", "completion length limit"},
        {"eval.stop", OptionType::StringList, Json::array(), "", "stop strings (cut from the text the rewards see)"},
        {"eval.max_prompts", OptionType::Int, d.max_prompts, "prompts", "evaluate the first N prompts of the split; 0 = all"},
        {"eval.seed", OptionType::Int, int64_t(d.seed), "", "seeds every sample: the same seed gives the same completions"},
        {"eval.accuracy_reward", OptionType::String, d.accuracy_reward, "",
         "reward component that decides correctness; \"\" = the first [[reward]]"},
        {"eval.correct_threshold", OptionType::Float, d.correct_threshold, "score",
         "a sample is correct when the accuracy component scores above this"},
        {"eval.best_of", OptionType::String, d.best_of, "",
         "reward component that picks each prompt's best sample (its highest score; the first on ties): best_of_n is "
         "the share of picks that are correct; \"\" = off"},
        {"eval.answer_format", OptionType::String, d.answer_format, "",
         "answer extraction for maj@k votes",
         {"auto", "gsm8k", "boxed", "answer_is", "last_number"}},
        {"eval.add_special_tokens", OptionType::Bool, d.add_special_tokens, "",
         "encode prompts with the tokenizer's BOS; false when the chat template writes it"},
        {"eval.max_batch_rows", OptionType::Int, d.max_batch_rows, "sequences", "sequences decoded together"},
        {"eval.prompts_per_call", OptionType::Int, d.prompts_per_call, "prompts",
         "prompts per generation call (progress is reported between calls); 0 = all at once"},
    };
  }();
  return schema;
}

EvalOptions eval_options_from_json(const Json& t, const std::string& source) {
  const std::string src = source + " [eval]";
  EvalOptions o;
  o.n_samples = json_require<int64_t>(t, "n_samples", src);
  const Json temp = json_require<Json>(t, "temperature", src);
  if (temp.is_number()) {
    o.temperature = temp.get<double>();
  } else {
    check(temp.is_string() && temp.get<std::string>() == "auto", source,
          ": key 'eval.temperature' must be a number >= 0 or \"auto\", got ", temp.dump());
  }
  o.top_k = json_require<int64_t>(t, "top_k", src);
  o.top_p = json_require<double>(t, "top_p", src);
  o.min_p = json_require<double>(t, "min_p", src);
  o.max_new_tokens = json_require<int64_t>(t, "max_new_tokens", src);
  o.stop = json_require<std::vector<std::string>>(t, "stop", src);
  o.max_prompts = json_require<int64_t>(t, "max_prompts", src);
  const int64_t seed = json_require<int64_t>(t, "seed", src);
  check(seed >= 0, source, ": key 'eval.seed' must be >= 0, got ", seed);
  o.seed = static_cast<uint64_t>(seed);
  o.accuracy_reward = json_require<std::string>(t, "accuracy_reward", src);
  o.correct_threshold = json_require<double>(t, "correct_threshold", src);
  o.best_of = json_require<std::string>(t, "best_of", src);
  o.answer_format = json_require<std::string>(t, "answer_format", src);
  o.add_special_tokens = json_require<bool>(t, "add_special_tokens", src);
  o.max_batch_rows = json_require<int64_t>(t, "max_batch_rows", src);
  o.prompts_per_call = json_require<int64_t>(t, "prompts_per_call", src);
  with_context(source, [&] { o.validate(); });
  return o;
}

}  // namespace rlf

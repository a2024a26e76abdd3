#include "train/process_steps.h"

#include <chrono>
#include <cmath>

#include "eval/evaluator.h"

#include "rm/process_reward.h"
#include "util/error.h"

namespace rlf {

Episode process_episode(const Policy& policy, const StepExample& example, const std::string& delimiter,
                        bool add_special_tokens) {
  check(example.labels.size() == example.steps.size(), example.where, ": ", example.labels.size(), " labels for ",
        example.steps.size(), " steps");
  check(!policy.eos_token_ids.empty(), "a process reward model's episodes need an EOS token id (none found)");
  const ProcessInput in = process_input(*policy.tokenizer, example, delimiter, add_special_tokens);
  const std::vector<int32_t> prompt(in.tokens.begin(), in.tokens.begin() + in.prompt_tokens);
  std::vector<int32_t> response(in.tokens.begin() + in.prompt_tokens, in.tokens.end());
  response.push_back(policy.eos_token_ids.front());
  Episode e = Episode::single_turn(0, prompt, response, std::vector<float>(response.size(), 0.0f));
  e.segments.back().text = e.completion_text = example.response(delimiter);
  e.step_label.assign(e.tokens.size(), std::nanf(""));
  for (size_t k = 0; k < in.ends.size(); ++k)
    e.step_label[static_cast<size_t>(in.ends[k] + 1)] = static_cast<float>(example.labels[k]);
  return e;
}

Json MonteCarloReport::to_json() const {
  return {{"solutions", solutions}, {"steps", steps},         {"rollouts", rollouts},
          {"label_mean", label_mean}, {"agreement", agreement < 0 ? Json(nullptr) : Json(agreement)},
          {"seconds", seconds}};
}

MonteCarloReport monte_carlo_step_labels(Policy& policy, std::vector<StepExample>& examples, RewardSet& rewards,
                                         const std::string& delimiter, const EvalOptions& sampling) {
  const auto t0 = std::chrono::steady_clock::now();
  MonteCarloReport rep;
  // One prompt per (example, step before the last): the prompt and the steps so far.
  std::vector<PromptExample> prefixes, wholes;
  std::vector<std::vector<RewardSample>> whole_completions;
  auto example_for = [&](const StepExample& e, const std::string& prompt, const std::string& id) {
    PromptExample p;
    p.id = id;
    p.raw_prompt = p.prompt = prompt;
    p.reference = e.reference;
    p.record = Json{{"reference", e.reference}};
    p.where = e.where;
    return p;
  };
  for (const StepExample& e : examples) {
    check(!e.reference.empty(), e.where, ": Monte-Carlo step labels score rollouts against the right answer and this "
          "solution has none (process.data.reference_field)");
    std::string prefix;
    for (size_t k = 0; k + 1 < e.steps.size(); ++k) {
      prefix += e.steps[k] + delimiter;
      prefixes.push_back(example_for(e, e.prompt + prefix, e.id + "#" + std::to_string(k)));
    }
    wholes.push_back(example_for(e, e.prompt, e.id));
    RewardSample s;
    s.completion = e.response(delimiter);
    whole_completions.push_back({s});
  }
  EvalOptions o = sampling;
  o.max_prompts = 0;
  std::vector<double> estimates;
  if (!prefixes.empty()) {
    const EvalResult r = evaluate(policy, prefixes, rewards, o);
    for (const PromptResult& p : r.prompts)
      estimates.push_back(static_cast<double>(p.n_correct) / static_cast<double>(o.n_samples));
  }
  EvalOptions one = sampling;
  one.n_samples = 1;
  const EvalResult whole = evaluate_completions(wholes, whole_completions, rewards, one);
  size_t at = 0;
  int64_t agree = 0, compared = 0;
  double sum = 0;
  for (size_t i = 0; i < examples.size(); ++i) {
    StepExample& e = examples[i];
    std::vector<double> labels;
    for (size_t k = 0; k + 1 < e.steps.size(); ++k) labels.push_back(estimates[at++]);
    labels.push_back(static_cast<double>(whole.prompts[i].n_correct));
    if (e.labels.size() == labels.size()) {
      for (size_t k = 0; k < labels.size(); ++k) agree += (labels[k] > 0.5) == (e.labels[k] > 0.5), ++compared;
    }
    for (double v : labels) sum += v;
    rep.steps += static_cast<int64_t>(labels.size());
    e.labels = std::move(labels);
  }
  rep.solutions = static_cast<int64_t>(examples.size());
  rep.rollouts = static_cast<int64_t>(prefixes.size()) * o.n_samples;
  rep.label_mean = rep.steps ? sum / static_cast<double>(rep.steps) : 0.0;
  rep.agreement = compared ? static_cast<double>(agree) / static_cast<double>(compared) : -1.0;
  rep.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return rep;
}

}  // namespace rlf

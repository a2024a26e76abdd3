// evaluate(): generate -> score -> metrics. The scoring and the metrics are
// shared with evaluate_completions() through the Tally below.
#include "eval/evaluator.h"

#include <chrono>
#include <cmath>
#include <iomanip>
#include <sstream>

#include "rewards/math/majority_vote.h"
#include "eval/pass_at_k.h"
#include "rewards/exact_match.h"
#include "env/episode_rewards.h"
#include "env/single_turn_env.h"
#include "rollout/engine.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/seed.h"

namespace rlf {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// The index of the component named by eval option `key` (accuracy_reward, best_of).
size_t component_index(const RewardSet& rewards, const std::string& name, const char* key) {
  check(!rewards.empty(), "evaluate: no reward components; configure at least one reward");
  if (name.empty()) return 0;
  return rewards.index_of(name, str("eval option ", key));
}

// Scores groups one at a time and accumulates what the metrics need.
class Tally {
 public:
  Tally(RewardSet& rewards, const EvalOptions& options)
      : rewards_(rewards),
        options_(options),
        accuracy_(component_index(rewards, options.accuracy_reward, "accuracy_reward")),
        best_of_(options.best_of.empty() ? -1 : static_cast<int64_t>(component_index(rewards, options.best_of, "best_of"))),
        format_(parse_reward_answer_format(options.answer_format)) {}

  void add(const PromptExample& example, std::vector<RewardSample> samples) {
    check(int64_t(samples.size()) == options_.n_samples, example.where, ": ", samples.size(),
          " completions for a prompt, expected n_samples = ", options_.n_samples);
    const auto t0 = Clock::now();
    RewardGroup group;
    group.prompt = example.prompt;
    group.reference = example.reference;
    group.record = example.record;
    group.max_new_tokens = options_.max_new_tokens;
    group.samples = std::move(samples);
    GroupScores scores = with_context(example.where, [&] { return rewards_.score(group); });
    const auto totals = scores.totals(RewardAggregation::sum_then_normalize);

    PromptResult p;
    p.id = example.id;
    p.prompt = example.prompt;
    p.reference = example.reference;
    for (size_t i = 0; i < group.samples.size(); ++i) {
      const RewardSample& s = group.samples[i];
      EvalSample e;
      e.text = s.completion;
      e.n_tokens = int64_t(s.completion_ids.size());
      e.finish_reason = s.finish_reason;
      e.reward = totals[i];
      for (const auto& component : scores.results) e.scores.push_back(component[i].score);
      e.correct = is_correct(scores.results[accuracy_][i].score, options_.correct_threshold);
      e.answer = math::extract_answer(s.completion, format_);
      e.explanation = scores.describe(i);
      p.n_correct += e.correct;
      p.samples.push_back(std::move(e));
    }
    score_s_ += seconds_since(t0);
    prompts_.push_back(std::move(p));
    groups_.push_back(std::move(scores));
  }

  EvalResult finish() {
    EvalResult r;
    r.n_prompts = int64_t(prompts_.size());
    r.n_samples = options_.n_samples;
    r.temperature = options_.effective_temperature();
    r.seed = options_.seed;
    for (const auto& c : rewards_.components()) r.component_names.push_back(c.name);
    r.accuracy_reward = r.component_names[accuracy_];
    r.components = component_stats(groups_);
    r.score_s = score_s_;

    const std::vector<int64_t> ks = reported_k_values(options_.n_samples);
    if (best_of_ >= 0) r.best_of_n = 0;
    double reward_sum = 0;
    int64_t n_rewarded = 0, n_truncated = 0, n_completions = 0;
    for (const PromptResult& p : prompts_) {
      std::vector<std::optional<std::string>> answers;
      std::vector<bool> correct;
      for (const EvalSample& s : p.samples) {
        answers.push_back(s.answer);
        correct.push_back(s.correct);
        if (s.reward) {
          reward_sum += *s.reward;
          ++n_rewarded;
        } else {
          ++r.n_reward_missing;
        }
        r.n_completion_tokens += s.n_tokens;
        n_truncated += s.finish_reason == "length";
        ++n_completions;
      }
      if (best_of_ >= 0) {
        // The sample the component scores highest (the first on ties; unscored samples are never picked).
        int64_t pick = -1;
        for (size_t i = 0; i < p.samples.size(); ++i) {
          const auto& sc = p.samples[i].scores[static_cast<size_t>(best_of_)];
          if (sc && (pick < 0 || *sc > *p.samples[static_cast<size_t>(pick)].scores[static_cast<size_t>(best_of_)]))
            pick = static_cast<int64_t>(i);
        }
        if (pick >= 0 && p.samples[static_cast<size_t>(pick)].correct) r.best_of_n += 1;
      }
      const std::vector<int> clusters = cluster_answers(answers);
      for (int64_t k : ks) {
        r.pass_at_k[k] += pass_at_k(options_.n_samples, p.n_correct, k);
        if (k >= 2) r.maj_at_k[k] += *majority_at_k(clusters, correct, k);
      }
    }
    const double n_prompts = std::max<double>(1.0, double(r.n_prompts));
    for (auto& [k, v] : r.pass_at_k) v /= n_prompts;
    for (auto& [k, v] : r.maj_at_k) v /= n_prompts;
    if (best_of_ >= 0) r.best_of = r.component_names[static_cast<size_t>(best_of_)], r.best_of_n /= n_prompts;
    r.mean_reward = n_rewarded ? reward_sum / double(n_rewarded) : 0.0;
    r.mean_completion_tokens = n_completions ? double(r.n_completion_tokens) / double(n_completions) : 0.0;
    r.truncated_fraction = n_completions ? double(n_truncated) / double(n_completions) : 0.0;
    r.prompts = std::move(prompts_);
    return r;
  }

 private:
  RewardSet& rewards_;
  const EvalOptions& options_;
  size_t accuracy_;
  int64_t best_of_;  // component index, -1 = off
  math::AnswerFormat format_;
  double score_s_ = 0;
  std::vector<PromptResult> prompts_;
  std::vector<GroupScores> groups_;
};

void check_records(const RewardSet& rewards, const std::vector<PromptExample>& examples, size_t n) {
  for (size_t i = 0; i < n; ++i) rewards.check_record(examples[i].record, examples[i].reference, examples[i].where);
}

}  // namespace

EvalResult evaluate(Policy& policy, const std::vector<PromptExample>& examples, RewardSet& rewards,
                    const EvalOptions& options, const EvalProgress& progress, const EvalEnvironment& environment) {
  const auto t_start = Clock::now();
  options.validate();
  check(!examples.empty(), "evaluate: no prompts to evaluate (the dataset split is empty)");
  const size_t n_prompts = options.max_prompts > 0 ? std::min(examples.size(), size_t(options.max_prompts))
                                                   : examples.size();
  Tally tally(rewards, options);  // resolves accuracy_reward before any generation
  check_records(rewards, examples, n_prompts);

  SingleTurnEnvironment single;
  Environment& env = environment.env ? *environment.env : single;
  for (size_t i = 0; i < n_prompts; ++i) env.check_record(examples[i]);
  EpisodeOptions eo = environment.episode;
  eo.max_batch_rows = options.max_batch_rows;
  eo.add_special_tokens = options.add_special_tokens;
  EpisodeProducer producer(policy, env, eo);
  const SamplingParams params = options.sampling();

  const size_t chunk = options.prompts_per_call > 0 ? size_t(options.prompts_per_call) : n_prompts;
  double generate_s = 0;
  for (size_t begin = 0; begin < n_prompts; begin += chunk) {
    const size_t end = std::min(n_prompts, begin + chunk);
    std::vector<const PromptExample*> tasks;
    std::vector<uint64_t> seeds;
    for (size_t i = begin; i < end; ++i) {
      tasks.push_back(&examples[i]);
      seeds.push_back(derive_seed(options.seed, uint64_t(i)));
    }
    const auto t0 = Clock::now();
    std::vector<EpisodeGroup> groups = producer.produce(tasks, options.n_samples, params, seeds, 0, nullptr);
    generate_s += seconds_since(t0);
    for (size_t i = 0; i < groups.size(); ++i)
      tally.add(examples[begin + i], reward_group_of(groups[i], options.max_new_tokens).samples);
    if (progress) progress(int64_t(end), int64_t(n_prompts));
  }
  producer.engine().release_cache();

  EvalResult result = tally.finish();
  result.generate_s = generate_s;
  result.tokens_per_s = generate_s > 0 ? double(result.n_completion_tokens) / generate_s : 0.0;
  result.wall_s = seconds_since(t_start);
  return result;
}

EvalResult evaluate_completions(const std::vector<PromptExample>& examples,
                                const std::vector<std::vector<RewardSample>>& completions, RewardSet& rewards,
                                const EvalOptions& options) {
  const auto t_start = Clock::now();
  options.validate();
  check(examples.size() == completions.size(), "evaluate_completions: ", examples.size(), " prompts but ",
        completions.size(), " completion groups");
  check(!examples.empty(), "evaluate_completions: no prompts to evaluate");
  Tally tally(rewards, options);
  check_records(rewards, examples, examples.size());
  for (size_t i = 0; i < examples.size(); ++i) tally.add(examples[i], completions[i]);
  EvalResult result = tally.finish();
  result.wall_s = seconds_since(t_start);
  return result;
}

Json eval_summary_json(const EvalResult& r) {
  Json j = Json::object();
  for (const auto& [k, v] : r.pass_at_k) j["pass@" + std::to_string(k)] = v;
  for (const auto& [k, v] : r.maj_at_k) j["maj@" + std::to_string(k)] = v;
  if (!r.best_of.empty()) j["best_of_n"] = r.best_of_n, j["best_of"] = r.best_of;
  j["mean_reward"] = r.mean_reward;
  for (const ComponentStats& c : r.components) j["reward/" + c.name] = c.mean;
  j["accuracy_reward"] = r.accuracy_reward;
  j["n_prompts"] = r.n_prompts;
  j["n_samples"] = r.n_samples;
  j["n_reward_missing"] = r.n_reward_missing;
  j["temperature"] = r.temperature;
  j["seed"] = r.seed;
  j["mean_completion_tokens"] = r.mean_completion_tokens;
  j["truncated_fraction"] = r.truncated_fraction;
  j["n_completion_tokens"] = r.n_completion_tokens;
  j["tokens_per_s"] = r.tokens_per_s;
  j["generate_s"] = r.generate_s;
  j["score_s"] = r.score_s;
  j["wall_s"] = r.wall_s;
  return j;
}

Json prompt_result_json(const PromptResult& p, const std::vector<std::string>& component_names) {
  auto optional_json = [](const auto& v) { return v ? Json(*v) : Json(nullptr); };
  Json samples = Json::array();
  for (const EvalSample& s : p.samples) {
    Json scores = Json::object();
    for (size_t c = 0; c < s.scores.size() && c < component_names.size(); ++c)
      scores[component_names[c]] = optional_json(s.scores[c]);
    samples.push_back({{"text", s.text},
                       {"n_tokens", s.n_tokens},
                       {"finish_reason", s.finish_reason},
                       {"reward", optional_json(s.reward)},
                       {"scores", scores},
                       {"correct", s.correct},
                       {"answer", optional_json(s.answer)},
                       {"explanation", s.explanation}});
  }
  return {{"id", p.id},
          {"prompt", p.prompt},
          {"reference", p.reference},
          {"n_correct", p.n_correct},
          {"n_samples", int64_t(p.samples.size())},
          {"samples", samples}};
}

void write_eval_details(const std::filesystem::path& path, const EvalResult& result) {
  std::string out;
  for (const PromptResult& p : result.prompts)
    out += json_line(prompt_result_json(p, result.component_names)) + "\n";
  with_context("writing eval details '" + path.string() + "'", [&] { write_file_atomic(path, out); });
}

std::string format_eval_report(const EvalResult& r) {
  std::ostringstream out;
  out << std::fixed << std::setprecision(4);
  out << "prompts " << r.n_prompts << ", samples per prompt " << r.n_samples << ", temperature " << r.temperature
      << ", seed " << r.seed << "\n";
  for (const auto& [k, v] : r.pass_at_k) out << "  pass@" << k << "  " << v << "\n";
  for (const auto& [k, v] : r.maj_at_k) out << "  maj@" << k << "   " << v << "\n";
  if (!r.best_of.empty()) out << "  best-of-" << r.n_samples << " by " << r.best_of << "  " << r.best_of_n << "\n";
  out << "  mean reward " << r.mean_reward;
  if (r.n_reward_missing) out << " (" << r.n_reward_missing << " samples unscored)";
  out << "\n";
  for (const ComponentStats& c : r.components) {
    out << "    " << c.name << (c.name == r.accuracy_reward ? " (accuracy)" : "") << ": mean " << c.mean << ", std "
        << c.std;
    if (c.n_missing) out << ", " << c.n_missing << " missing";
    out << "\n";
  }
  out << std::setprecision(1) << "  completion length " << r.mean_completion_tokens << " tokens, truncated "
      << 100.0 * r.truncated_fraction << "%\n";
  out << std::setprecision(2) << "  time " << r.wall_s << " s (generate " << r.generate_s << " s, score " << r.score_s
      << " s), " << std::setprecision(0) << r.tokens_per_s << " tokens/s\n";
  return out.str();
}

}  // namespace rlf

#include "feedback/reflexion.h"

#include "env/episode_producer.h"
#include "env/scored_group.h"
#include "env/single_turn_env.h"
#include "util/error.h"
#include "util/seed.h"
#include "util/strings.h"

namespace rlf {

namespace {


}  // namespace

void ReflexionOptions::validate() const {
  check(attempts >= 1 && attempts <= 100, "--attempts must be in [1, 100] (got ", attempts, ")");
  check(attempt_prompt.find("{prompt}") != std::string::npos, "the attempt prompt must contain {prompt}");
  sampling.validate("rollout.");
}

Json ReflexionResult::to_json() const {
  Json a = Json::array();
  for (const ReflexionAttempt& x : attempts)
    a.push_back({{"attempt", x.attempt}, {"tried", x.n_tried}, {"solved", x.n_solved}, {"accuracy", x.accuracy},
                 {"reflections", x.n_reflections}, {"critic_failures", x.n_critic_failures},
                 {"memory_cut", x.n_memory_cut}});
  return {{"n_tasks", n_tasks}, {"attempts", a}};
}

ReflexionResult run_reflexion(Policy& policy, const std::vector<PromptExample>& tasks, RewardSet& rewards,
                              Critic& critic, FeedbackMemory& memory, const ReflexionOptions& o) {
  o.validate();
  check(o.accuracy_component < rewards.size(), "reflexion: the accuracy reward is not in the reward set");
  SingleTurnEnvironment env;
  EpisodeOptions eo;
  eo.max_batch_rows = o.max_batch_rows;
  eo.add_special_tokens = o.add_special_tokens;
  EpisodeProducer producer(policy, env, eo);
  const int64_t context = policy.loaded.config.max_position_embeddings;
  ReflexionResult result;
  result.n_tasks = static_cast<int64_t>(tasks.size());
  std::vector<char> solved(tasks.size(), 0);
  int64_t n_solved_total = 0;
  for (int64_t attempt = 1; attempt <= o.attempts; ++attempt) {
    ReflexionAttempt a;
    a.attempt = attempt;
    // Attempt prompts: the task's reflections, then the task.
    std::vector<PromptExample> shown;
    std::vector<size_t> index;
    for (size_t i = 0; i < tasks.size(); ++i) {
      if (solved[i]) continue;
      std::vector<std::string> notes = memory.recall(tasks[i].id, tasks[i].prompt);
      PromptExample p = tasks[i];
      for (size_t skip = 0;; ++skip) {
        std::string mem;
        for (size_t k = skip; k < notes.size(); ++k) mem += replace_all(o.memory_line, "{reflection}", notes[k]);
        p.prompt = replace_all(replace_all(o.attempt_prompt, "{memory}", mem), "{prompt}", tasks[i].prompt);
        const int64_t n = static_cast<int64_t>(policy.tokenizer->encode(p.prompt, o.add_special_tokens).size());
        if (n + o.sampling.max_new_tokens <= context || skip >= notes.size()) {
          if (skip > 0) ++a.n_memory_cut;
          if (n + o.sampling.max_new_tokens > context) p.prompt = tasks[i].prompt;
          break;
        }
      }
      shown.push_back(std::move(p));
      index.push_back(i);
    }
    a.n_tried = static_cast<int64_t>(shown.size());
    if (shown.empty()) {
      a.accuracy = result.n_tasks ? static_cast<double>(n_solved_total) / static_cast<double>(result.n_tasks) : 0.0;
      result.attempts.push_back(a);
      continue;
    }
    std::vector<const PromptExample*> ptrs;
    std::vector<uint64_t> seeds;
    for (size_t k = 0; k < shown.size(); ++k)
      ptrs.push_back(&shown[k]), seeds.push_back(derive_seed(o.seed, index[k] * 7919u + attempt));
    std::vector<EpisodeGroup> groups;
    {
      torch::NoGradGuard ng;
      groups = producer.produce(ptrs, 1, o.sampling, seeds, 0, nullptr);
      producer.engine().release_cache();
    }
    std::vector<CritiqueRequest> requests;
    std::vector<size_t> failed;
    for (size_t k = 0; k < groups.size(); ++k) {
      const size_t i = index[k];
      // Scored against the task as given (its record and reference), the answer as written.
      const ScoredGroup scored = score_group(std::move(groups[k]), rewards, o.sampling.max_new_tokens, o.aggregation);
      if (is_correct(scored, o.accuracy_component, 0)) {
        solved[i] = 1, ++a.n_solved, ++n_solved_total;
        continue;
      }
      CritiqueRequest r;
      r.task = &tasks[i];
      r.prompt = shown[k].prompt;
      r.response = scored.group.episodes[0].transcript();
      r.reward = scored.totals[0];
      r.correct = false;
      r.explanation = scored.scores.describe(0);
      requests.push_back(std::move(r));
      failed.push_back(i);
    }
    if (attempt < o.attempts && !requests.empty()) {
      std::vector<Critique> cs = critic.critique(requests);
      for (size_t k = 0; k < cs.size(); ++k) {
        if (!cs[k].ok) {
          ++a.n_critic_failures;
          continue;
        }
        memory.add(tasks[failed[k]].id, tasks[failed[k]].prompt, cs[k].text);
        ++a.n_reflections;
      }
    }
    a.accuracy = static_cast<double>(n_solved_total) / static_cast<double>(result.n_tasks);
    result.attempts.push_back(a);
  }
  return result;
}

}  // namespace rlf

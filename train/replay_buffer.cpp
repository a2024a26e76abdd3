#include "train/replay_buffer.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <type_traits>

#include "env/episode_json.h"
#include "util/error.h"
#include "util/hash.h"

namespace rlf {

namespace {

constexpr const char* kFormat = "rlf-replay";
constexpr int64_t kVersion = 1;

std::string prompt_hash(const std::string& prompt) { return fnv1a64_hex(prompt); }

}  // namespace

void ReplayOptions::validate() const {
  check(capacity_per_task >= 1, "replay.capacity_per_task must be >= 1 (got ", capacity_per_task, ")");
  check(max_tasks >= 1, "replay.max_tasks must be >= 1 (got ", max_tasks, ")");
  check(inject >= 1, "replay.inject must be >= 1 (got ", inject, ")");
}

Json ReplayStats::metrics(Reducer& reducer, int64_t buffer_size) const {
  struct {
    double stored, groups_without, hits, injected, size;
  } v{.stored = static_cast<double>(n_stored),
      .groups_without = static_cast<double>(n_groups_without),
      .hits = static_cast<double>(n_hits),
      .injected = static_cast<double>(n_injected),
      .size = static_cast<double>(buffer_size)};
  reducer.sum_fields(v);
  return Json{{"replay/stored", v.stored},
              {"replay/groups_without_success", v.groups_without},
              {"replay/hits", v.hits},
              {"replay/hit_rate", v.groups_without > 0 ? v.hits / v.groups_without : 0.0},
              {"replay/injected", v.injected},
              {"replay/size", v.size}};
}

ReplayBuffer::ReplayBuffer(ReplayOptions options) : options_(options) { options_.validate(); }

int64_t ReplayBuffer::size() const {
  int64_t n = 0;
  for (const auto& [id, t] : tasks_) n += static_cast<int64_t>(t.episodes.size());
  return n;
}

void ReplayBuffer::evict_tasks() {
  while (static_cast<int64_t>(tasks_.size()) > options_.max_tasks) {
    auto oldest = tasks_.begin();
    for (auto it = tasks_.begin(); it != tasks_.end(); ++it)
      if (it->second.last_step < oldest->second.last_step) oldest = it;
    tasks_.erase(oldest);
  }
}

ReplayStats ReplayBuffer::step(std::vector<ScoredGroup>& groups, RewardSet& rewards, RewardAggregation aggregation,
                               size_t accuracy_component, int64_t max_new_tokens, int64_t step_index) {
  ReplayStats st;
  for (ScoredGroup& g : groups) {
    const std::string& id = g.group.task->id;
    bool any_correct = false;
    for (size_t i = 0; i < g.group.episodes.size(); ++i) {
      const Episode& e = g.group.episodes[i];
      if (e.source != EpisodeSource::Rollout || !is_correct(g, accuracy_component, i)) continue;
      any_correct = true;
      Task& t = tasks_[id];
      t.prompt_hash = prompt_hash(g.group.task->prompt);
      t.last_step = step_index;
      Episode kept = e;
      kept.advantage.clear(), kept.ref_logprob.clear(), kept.token_reward.clear(), kept.teacher_logprob.clear();
      kept.teacher_topk_id.clear(), kept.teacher_topk_logprob.clear();
      kept.reward.reset();
      t.episodes.push_back({std::move(kept), step_index});
      while (static_cast<int64_t>(t.episodes.size()) > options_.capacity_per_task) t.episodes.pop_front();
      ++st.n_stored;
    }
    if (any_correct) continue;
    ++st.n_groups_without;
    auto it = tasks_.find(id);
    if (it == tasks_.end() || it->second.prompt_hash != prompt_hash(g.group.task->prompt)) continue;
    EpisodeGroup injected;
    injected.task = g.group.task;
    injected.prompt = g.group.prompt;
    // The newest first.
    for (auto s = it->second.episodes.rbegin();
         s != it->second.episodes.rend() && static_cast<int64_t>(injected.episodes.size()) < options_.inject; ++s) {
      Episode e = s->episode;
      e.group = g.group.episodes.empty() ? 0 : g.group.episodes[0].group;
      e.on_policy = false;
      e.source = EpisodeSource::Replay;
      injected.episodes.push_back(std::move(e));
    }
    if (injected.episodes.empty()) continue;
    ScoredGroup scored = score_group(std::move(injected), rewards, max_new_tokens, aggregation);
    for (size_t j = 0; j < scored.group.episodes.size(); ++j) {
      Episode& e = scored.group.episodes[j];
      e.reward = scored.totals[j];
      g.group.episodes.push_back(std::move(e));
      for (size_t c = 0; c < g.scores.results.size(); ++c) g.scores.results[c].push_back(scored.scores.results[c][j]);
      g.totals.push_back(scored.totals[j]);
      ++st.n_injected;
    }
    ++st.n_hits;
  }
  evict_tasks();
  return st;
}

Json ReplayBuffer::to_json() const {
  Json tasks = Json::array();
  for (const auto& [id, t] : tasks_) {
    Json eps = Json::array();
    for (const Stored& s : t.episodes) eps.push_back({{"step", s.step}, {"episode", episode_to_json(s.episode)}});
    tasks.push_back({{"id", id}, {"prompt_hash", t.prompt_hash}, {"last_step", t.last_step}, {"episodes", eps}});
  }
  return {{"format", kFormat}, {"version", kVersion}, {"tasks", tasks}};
}

void ReplayBuffer::restore(const Json& saved, const std::map<std::string, std::string>& prompts,
                           const std::string& where) {
  check(saved.is_object() && saved.value("format", "") == kFormat, where,
        ": not an rlf replay buffer (format \"", saved.is_object() ? saved.value("format", "") : "", "\")");
  const int64_t version = json_require<int64_t>(saved, "version", where);
  check(version == kVersion, where, ": replay buffer format version ", version, " (this rlf reads version ",
        kVersion, ")");
  std::map<std::string, Task> tasks;
  for (const Json& t : json_require<Json>(saved, "tasks", where)) {
    const std::string id = json_require<std::string>(t, "id", where);
    auto p = prompts.find(id);
    check(p != prompts.end(), where, ": the replay buffer holds task '", id,
          "', which is not in this run's dataset (a buffer from another task or dataset)");
    const std::string hash = json_require<std::string>(t, "prompt_hash", where);
    check(hash == prompt_hash(p->second), where, ": the replay buffer's task '", id,
          "' had another prompt (a buffer from another dataset or prompt template)");
    Task task;
    task.prompt_hash = hash;
    task.last_step = json_require<int64_t>(t, "last_step", where);
    for (const Json& s : json_require<Json>(t, "episodes", where))
      task.episodes.push_back(
          {episode_from_json(json_require<Json>(s, "episode", where), where + " task '" + id + "'"),
           json_require<int64_t>(s, "step", where)});
    tasks[id] = std::move(task);
  }
  tasks_ = std::move(tasks);
}

}  // namespace rlf

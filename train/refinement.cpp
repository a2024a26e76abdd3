#include "train/refinement.h"

#include <chrono>
#include <cmath>

#include "feedback/feedback_prompt.h"
#include "util/clock.h"
#include "util/error.h"
#include "util/seed.h"

namespace rlf {

namespace {

using Clock = std::chrono::steady_clock;

constexpr size_t kMaxNotes = 5;

void note(RefineStats& s, std::string text) {
  if (s.notes.size() < kMaxNotes) s.notes.push_back(std::move(text));
}


// One failed episode on its way to a refinement.
struct Pending {
  size_t group = 0, episode = 0;
  CritiqueRequest request;
  std::string critique;
};

}  // namespace

RefineStats& RefineStats::operator+=(const RefineStats& o) {
  n_failed += o.n_failed, n_critiques += o.n_critiques, n_critic_failures += o.n_critic_failures;
  n_refinements += o.n_refinements, n_correct += o.n_correct, n_added += o.n_added;
  n_skipped_context += o.n_skipped_context, n_truncated += o.n_truncated;
  n_groups_failed += o.n_groups_failed, n_groups_rescued += o.n_groups_rescued;
  n_rollouts += o.n_rollouts, n_rollouts_correct += o.n_rollouts_correct;
  n_generated_tokens += o.n_generated_tokens;
  critique_chars += o.critique_chars, critic_s += o.critic_s, refine_s += o.refine_s;
  for (const std::string& n : o.notes) note(*this, n);
  return *this;
}

const EnumNames<algo::OffPolicyObjective>& refine_objective_names() {
  static const EnumNames<algo::OffPolicyObjective> names{
      "refine.objective",
      {{algo::OffPolicyObjective::Shaped, "shaped"}, {algo::OffPolicyObjective::Likelihood, "likelihood"}}};
  return names;
}

const EnumNames<RefineSelect>& refine_select_names() {
  static const EnumNames<RefineSelect> names{"refine.select",
                                             {{RefineSelect::Correct, "correct"}, {RefineSelect::Best, "best"}}};
  return names;
}

void RefineOptions::validate() const {
  check(max_per_group >= 0, "refine.max_per_group must be >= 0 (0 = no limit), got ", max_per_group);
  check(max_critiques >= 0, "refine.max_critiques must be >= 0 (0 = all), got ", max_critiques);
  check(std::isfinite(gamma) && gamma > 0, "refine.gamma must be > 0 (got ", gamma, "; Critique-GRPO uses 0.1)");
  check(prompt.find("{critique}") != std::string::npos, "refine.prompt must contain {critique}");
}

Refiner::Refiner(EpisodeProducer& producer, RewardSet& rewards, Critic& critic, RefineOptions options,
                 SamplingParams sampling, RewardAggregation aggregation, size_t accuracy_component,
                 bool add_special_tokens, uint64_t seed)
    : producer_(producer),
      policy_(producer.policy()),
      rewards_(rewards),
      critic_(critic),
      options_(std::move(options)),
      sampling_(std::move(sampling)),
      aggregation_(aggregation),
      accuracy_component_(accuracy_component),
      add_special_tokens_(add_special_tokens),
      seed_(seed) {
  options_.validate();
  check(accuracy_component_ < rewards_.size(), "refine: the accuracy reward is not in the reward set");
}

RefineStats Refiner::refine(std::vector<ScoredGroup>& groups, uint64_t step_seed, int32_t version) {
  RefineStats st;
  // 1. Critiques for the failed episodes.
  std::vector<Pending> pending;
  std::vector<char> group_failed(groups.size(), 0);
  for (size_t g = 0; g < groups.size(); ++g) {
    const ScoredGroup& sg = groups[g];
    bool any_correct = false;
    for (size_t i = 0; i < sg.group.episodes.size(); ++i) {
      const Episode& e = sg.group.episodes[i];
      if (e.source != EpisodeSource::Rollout) continue;
      ++st.n_rollouts;
      if (!e.env_error.empty()) continue;  // no reward: nothing to learn from
      if (is_correct(sg, accuracy_component_, i)) {
        ++st.n_rollouts_correct, any_correct = true;
        continue;
      }
      ++st.n_failed;
      if (options_.max_critiques > 0 && static_cast<int64_t>(pending.size()) >= options_.max_critiques) continue;
      Pending p;
      p.group = g, p.episode = i;
      p.request.task = sg.group.task;
      p.request.prompt = sg.group.prompt;
      p.request.response = e.transcript();
      p.request.reward = sg.totals[i];
      p.request.correct = false;
      p.request.explanation = sg.scores.describe(i);
      pending.push_back(std::move(p));
    }
    if (!any_correct) group_failed[g] = 1, ++st.n_groups_failed;
  }
  if (pending.empty()) return st;
  auto t0 = Clock::now();
  std::vector<CritiqueRequest> requests;
  for (const Pending& p : pending) requests.push_back(p.request);
  std::vector<Critique> critiques = critic_.critique(requests);
  check(critiques.size() == requests.size(), "critic '", critic_.name(), "' returned ", critiques.size(),
        " critiques for ", requests.size(), " requests");
  st.critic_s = seconds_since(t0);
  st.n_critiques = static_cast<int64_t>(requests.size());

  // 2. Refinement prompts, fitted to the context.
  const int64_t context = policy_.loaded.config.max_position_embeddings;
  std::vector<TokenPrompt> gen;
  std::vector<size_t> gen_pending;  // gen[k] refines pending[gen_pending[k]]
  for (size_t k = 0; k < pending.size(); ++k) {
    Critique& c = critiques[k];
    st.n_generated_tokens += c.n_generated_tokens;
    if (!c.ok) {
      ++st.n_critic_failures;
      note(st, str("critic '", critic_.name(), "' failed on ", pending[k].request.task->where, ": ", c.error));
      continue;
    }
    st.critique_chars += static_cast<double>(c.text.size());
    pending[k].critique = c.text;
    auto fitted = fit_feedback_prompt(options_.prompt, pending[k].request, c.text, *policy_.tokenizer,
                                      add_special_tokens_, sampling_.max_new_tokens, context);
    if (!fitted) {
      ++st.n_skipped_context;
      note(st, str("refinement prompt for ", pending[k].request.task->where, " does not fit the context (", context,
                   " tokens) even without the response: skipped"));
      continue;
    }
    if (fitted->truncated) ++st.n_truncated;
    // Generated from the refinement prompt, recorded as an answer to the original prompt (its ids as sampled).
    const Episode& failed = groups[pending[k].group].group.episodes[pending[k].episode];
    TokenPrompt r;
    r.ids = std::move(fitted->ids);
    r.episode_prompt.assign(failed.tokens.begin(), failed.tokens.begin() + failed.n_prompt);
    r.params = sampling_;
    r.params.seed = derive_seed(step_seed ^ derive_seed(seed_, SeedStream::Refinement),
                                static_cast<uint64_t>(pending[k].group) * 1000003u + pending[k].episode);
    gen.push_back(std::move(r));
    gen_pending.push_back(k);
  }
  if (gen.empty()) return st;

  // 3. Refinements, as answers to the original prompts, scored per group.
  t0 = Clock::now();
  std::vector<Episode> refinements = producer_.produce_from_ids(gen, version);
  st.refine_s = seconds_since(t0);
  st.n_refinements = static_cast<int64_t>(refinements.size());
  std::vector<std::vector<size_t>> by_group(groups.size());  // indices into refinements (= into gen)
  for (size_t s = 0; s < refinements.size(); ++s) {
    st.n_generated_tokens += static_cast<int64_t>(refinements[s].tokens.size()) - refinements[s].n_prompt;
    by_group[pending[gen_pending[s]].group].push_back(s);
  }
  for (size_t g = 0; g < groups.size(); ++g) {
    if (by_group[g].empty()) continue;
    ScoredGroup& sg = groups[g];
    EpisodeGroup refined;
    refined.task = sg.group.task;
    refined.prompt = sg.group.prompt;
    for (size_t s : by_group[g]) {
      Episode e = std::move(refinements[s]);
      e.group = sg.group.episodes[pending[gen_pending[s]].episode].group;
      e.on_policy = false;
      e.source = EpisodeSource::Refinement;
      refined.episodes.push_back(std::move(e));
    }
    ScoredGroup scored = score_group(std::move(refined), rewards_, sampling_.max_new_tokens, aggregation_);
    const std::vector<std::optional<double>>& totals = scored.totals;

    // 4. Selection.
    std::vector<size_t> chosen;
    for (size_t j = 0; j < scored.group.episodes.size(); ++j) {
      if (!is_correct(scored, accuracy_component_, j) || !totals[j]) continue;
      ++st.n_correct;
      chosen.push_back(j);
    }
    if (options_.select == RefineSelect::Best && chosen.size() > 1) {
      size_t best = chosen[0];
      for (size_t j : chosen)
        if (*totals[j] > *totals[best]) best = j;
      chosen = {best};
    }
    if (options_.max_per_group > 0 && static_cast<int64_t>(chosen.size()) > options_.max_per_group)
      chosen.resize(static_cast<size_t>(options_.max_per_group));
    for (size_t j : chosen) {
      Episode& e = scored.group.episodes[j];
      // The critique stays with the refinement (samples log).
      e.turn_feedback[0] = pending[gen_pending[by_group[g][j]]].critique;
      e.reward = totals[j];
      sg.group.episodes.push_back(std::move(e));
      for (size_t c = 0; c < sg.scores.results.size(); ++c) sg.scores.results[c].push_back(scored.scores.results[c][j]);
      sg.totals.push_back(totals[j]);
      ++st.n_added;
    }
    if (group_failed[g] && !chosen.empty()) ++st.n_groups_rescued;
  }
  return st;
}

Json Refiner::metrics(const RefineStats& s, Reducer& reducer) {
  auto d = [](int64_t n) { return static_cast<double>(n); };
  struct {
    double failed, critiques, critic_failures, refinements, correct, added, skipped_context, truncated, groups_failed,
        groups_rescued, rollouts, rollouts_correct, generated_tokens, critique_chars, critic_s;
  } v{.failed = d(s.n_failed),
      .critiques = d(s.n_critiques),
      .critic_failures = d(s.n_critic_failures),
      .refinements = d(s.n_refinements),
      .correct = d(s.n_correct),
      .added = d(s.n_added),
      .skipped_context = d(s.n_skipped_context),
      .truncated = d(s.n_truncated),
      .groups_failed = d(s.n_groups_failed),
      .groups_rescued = d(s.n_groups_rescued),
      .rollouts = d(s.n_rollouts),
      .rollouts_correct = d(s.n_rollouts_correct),
      .generated_tokens = d(s.n_generated_tokens),
      .critique_chars = s.critique_chars,
      .critic_s = s.critic_s};
  reducer.sum_fields(v);
  double refine_s = s.refine_s;
  reducer.max(std::span<double>(&refine_s, 1));
  const double ok_critiques = v.critiques - v.critic_failures;
  Json m;
  m["refine/failed"] = v.failed;
  m["refine/critiques"] = v.critiques;
  m["refine/critic_failures"] = v.critic_failures;
  m["refine/refinements"] = v.refinements;
  m["refine/success_rate"] = v.refinements > 0 ? v.correct / v.refinements : 0.0;
  m["refine/added"] = v.added;
  m["refine/skipped_context"] = v.skipped_context;
  m["refine/truncated"] = v.truncated;
  m["refine/groups_failed"] = v.groups_failed;
  m["refine/groups_rescued"] = v.groups_rescued;
  m["refine/critique_chars_mean"] = ok_critiques > 0 ? v.critique_chars / ok_critiques : 0.0;
  m["refine/critic_latency_s"] = v.critiques > 0 ? v.critic_s / v.critiques : 0.0;
  m["refine/generated_tokens"] = v.generated_tokens;
  m["time/critic_s"] = v.critic_s;
  m["time/refine_s"] = refine_s;
  if (v.rollouts > 0) {
    m["accuracy/first_attempt"] = v.rollouts_correct / v.rollouts;
    m["accuracy/after_feedback"] = (v.rollouts_correct + v.correct) / v.rollouts;
  }
  for (const std::string& n : s.notes) m["notes"].push_back(n);
  return m;
}

}  // namespace rlf

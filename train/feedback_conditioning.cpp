#include "train/feedback_conditioning.h"

#include <chrono>

#include "util/error.h"

namespace rlf {

void FcpOptions::validate() const {
  check(!condition.empty(), "fcp.condition must not be empty: it is the feedback the rollout prompts carry (e.g. "
        "\"Correct.\", with data.prompt_template = \"Correct.\\n{prompt}\")");
  check(negative_weight >= 0 && negative_weight <= 1, "fcp.negative_weight must be in [0, 1], got ", negative_weight);
}

Json FcpStats::metrics(Reducer& reducer) const {
  struct {
    double episodes, positive, critic_failures, skipped_context, generated_tokens, fcp_s;
  } v{.episodes = static_cast<double>(n_episodes),
      .positive = static_cast<double>(n_positive),
      .critic_failures = static_cast<double>(n_critic_failures),
      .skipped_context = static_cast<double>(n_skipped_context),
      .generated_tokens = static_cast<double>(n_generated_tokens),
      .fcp_s = fcp_s};
  reducer.sum_fields(v);
  return {{"fcp/episodes", v.episodes},
          {"fcp/positive_frac", v.episodes > 0 ? v.positive / v.episodes : 0.0},
          {"fcp/critic_failures", v.critic_failures},
          {"fcp/skipped_context", v.skipped_context},
          {"fcp/generated_tokens", v.generated_tokens},
          {"time/fcp_s", v.fcp_s}};
}

FeedbackConditioning::FeedbackConditioning(const Tokenizer& tokenizer, Critic& critic, FcpOptions options,
                                           bool add_special_tokens, int64_t window)
    : tokenizer_(tokenizer),
      critic_(critic),
      options_(std::move(options)),
      add_special_tokens_(add_special_tokens),
      window_(window) {
  options_.validate();
}

namespace fcp_detail {

void drop_from_training(Episode& e) { std::fill(e.loss_weight.begin(), e.loss_weight.end(), 0.0f); }

}  // namespace fcp_detail

FcpStats FeedbackConditioning::relabel(std::vector<ScoredGroup>& groups, size_t accuracy_component) {
  const auto t0 = std::chrono::steady_clock::now();
  FcpStats st;
  std::vector<CritiqueRequest> requests;
  std::vector<Episode*> episodes;
  std::vector<const std::string*> prompts;
  for (ScoredGroup& g : groups) {
    const std::string& prompt = g.group.prompt;
    check(prompt.find(options_.condition) != std::string::npos, "fcp.condition \"", options_.condition,
          "\" is not in the rollout prompt of ", g.group.task ? g.group.task->where : std::string("a task"),
          ": every prompt must carry it (data.prompt_template = \"", options_.condition, "\\n{prompt}\", say)");
    for (size_t i = 0; i < g.group.episodes.size(); ++i) {
      Episode& e = g.group.episodes[i];
      if (e.source != EpisodeSource::Rollout || e.n_policy_tokens() == 0) continue;
      CritiqueRequest r;
      r.task = g.group.task;
      r.prompt = prompt;
      r.response = e.transcript();
      r.reward = e.reward;
      r.correct = is_correct(g, accuracy_component, i);
      r.explanation = g.scores.describe(i);
      requests.push_back(std::move(r));
      episodes.push_back(&e);
      prompts.push_back(&prompt);
    }
  }
  if (requests.empty()) return st;
  const std::vector<Critique> got = critic_.critique(requests);
  check(got.size() == requests.size(), "critic '", critic_.name(), "' returned ", got.size(), " critiques for ",
        requests.size(), " requests");
  for (size_t k = 0; k < got.size(); ++k) {
    Episode& e = *episodes[k];
    st.n_generated_tokens += got[k].n_generated_tokens;
    if (!got[k].ok) {
      ++st.n_critic_failures;
      fcp_detail::drop_from_training(e);
      continue;
    }
    ++st.n_episodes;
    if (got[k].text == options_.condition) {
      ++st.n_positive;
      continue;
    }
    std::string relabelled = *prompts[k];
    relabelled.replace(relabelled.find(options_.condition), options_.condition.size(), got[k].text);
    std::vector<int32_t> ids = tokenizer_.encode(relabelled, add_special_tokens_);
    if (ids.empty() || static_cast<int64_t>(ids.size()) + e.n_completion() > window_) {
      ++st.n_skipped_context;
      fcp_detail::drop_from_training(e);
      continue;
    }
    Episode moved = e.with_prompt(ids, relabelled);
    moved.on_policy = false;  // sampled under another prompt
    for (float& w : moved.loss_weight) w *= static_cast<float>(options_.negative_weight);
    e = std::move(moved);
  }
  st.fcp_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return st;
}

}  // namespace rlf

#include "env/episode_rewards.h"

namespace rlf {

RewardSample reward_sample_of(const Episode& e) {
  RewardSample s;
  s.completion = e.completion_text;
  s.completion_ids.assign(e.tokens.begin() + e.n_prompt, e.tokens.end());
  s.prompt_ids.assign(e.tokens.begin(), e.tokens.begin() + e.n_prompt);
  s.policy_mask.reserve(s.completion_ids.size());
  for (size_t t = static_cast<size_t>(e.n_prompt); t < e.tokens.size(); ++t)
    s.policy_mask.push_back(e.loss_weight[t] > 0 ? 1 : 0);
  s.finish_reason = e.finish_reason.empty() ? "length" : e.finish_reason;
  const bool multi = e.segments.size() > 2;  // more than prompt + one turn
  for (const Segment& g : e.segments) {
    if (g.role == SegmentRole::Prompt) continue;
    if (multi) s.turns.push_back({segment_role_name(g.role), g.written()});
  }
  if (!e.env_error.empty()) {
    s.env_missing_reason = "environment error: " + e.env_error;
  } else {
    double sum = 0;
    bool any = false;
    for (const auto& r : e.turn_rewards)
      if (r) sum += *r, any = true;
    if (any) s.env_reward = sum;
  }
  for (const std::string& f : e.turn_feedback)
    if (!f.empty()) s.env_explanation += (s.env_explanation.empty() ? "" : "; ") + f;
  return s;
}

RewardGroup reward_group_of(const EpisodeGroup& g, int64_t max_new_tokens) {
  RewardGroup rg;
  rg.prompt = g.prompt;
  rg.reference = g.task->reference;
  rg.record = g.task->record;
  rg.max_new_tokens = max_new_tokens;
  for (const Episode& e : g.episodes) rg.samples.push_back(reward_sample_of(e));
  return rg;
}

}  // namespace rlf

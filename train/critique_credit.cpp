#include "train/critique_credit.h"

#include <cmath>

#include "algorithms/span_credit.h"
#include "feedback/critique_spans.h"
#include "util/error.h"

namespace rlf {

void CritiqueCreditOptions::validate() const {
  check(std::isfinite(coef) && coef > 0 && coef <= 100, "span_credit.coef must be in (0, 100] (got ", coef, ")");
  check(episodes == "failed" || episodes == "all", "span_credit.episodes must be \"failed\" or \"all\" (got \"",
        episodes, "\")");
  check(max_critiques >= 0, "span_credit.max_critiques must be >= 0 (0 = all), got ", max_critiques);
}

CritiqueCredit::CritiqueCredit(Critic& critic, const Tokenizer& tokenizer, CritiqueCreditOptions options)
    : critic_(critic), tokenizer_(tokenizer), options_(std::move(options)) {
  options_.validate();
}

Json CritiqueCredit::apply(std::vector<ScoredGroup>& groups, Reducer& reducer) {
  struct Pending {
    Episode* episode;
    DecodedTokens decoded;
  };
  std::vector<Pending> pending;
  std::vector<CritiqueRequest> requests;
  for (ScoredGroup& g : groups)
    for (size_t i = 0; i < g.group.episodes.size(); ++i) {
      Episode& e = g.group.episodes[i];
      if (e.source != EpisodeSource::Rollout || !e.reward || e.advantage.size() != e.tokens.size()) continue;
      if (options_.episodes == "failed" && e.correct.value_or(false)) continue;
      if (options_.max_critiques > 0 && static_cast<int64_t>(requests.size()) >= options_.max_critiques) break;
      const std::span<const int32_t> completion(e.tokens.data() + e.n_prompt, e.tokens.size() - e.n_prompt);
      Pending p{.episode = &e, .decoded = decode_with_offsets(tokenizer_, completion)};
      CritiqueRequest r;
      r.task = g.group.task;
      r.prompt = g.group.prompt;
      r.response = p.decoded.text;
      r.reward = e.reward;
      r.correct = e.correct.value_or(false);
      r.explanation = g.scores.describe(i);
      requests.push_back(std::move(r));
      pending.push_back(std::move(p));
    }
  struct {
    double critiques = 0, failures = 0, with_spans = 0, unmatched = 0, flagged = 0, policy_tokens = 0;
  } s;
  if (!requests.empty()) {
    const std::vector<Critique> critiques = critic_.critique(requests);
    check(critiques.size() == requests.size(), "critic '", critic_.name(), "' returned ", critiques.size(),
          " critiques for ", requests.size(), " requests");
    for (size_t k = 0; k < pending.size(); ++k) {
      const Critique& c = critiques[k];
      s.critiques += 1;
      if (!c.ok) {
        s.failures += 1;
        continue;
      }
      int64_t unmatched = 0;
      const std::vector<CritiqueSpan> spans =
          c.spans.empty() ? spans_from_critique(c.text, requests[k].response, &unmatched) : c.spans;
      s.unmatched += static_cast<double>(unmatched);
      if (!spans.empty()) s.with_spans += 1;
      Episode& e = *pending[k].episode;
      const std::vector<float> on_completion = token_scores(pending[k].decoded, spans);
      std::vector<float> score(e.tokens.size(), 0.0f);
      std::copy(on_completion.begin(), on_completion.end(), score.begin() + e.n_prompt);
      s.flagged += static_cast<double>(algo::add_span_credit(e.advantage, e.loss_weight, score, options_.coef));
      s.policy_tokens += static_cast<double>(e.n_policy_tokens());
    }
  }
  reducer.sum_fields(s);
  Json m;
  m["span_credit/critiques"] = s.critiques;
  m["span_credit/critic_failures"] = s.failures;
  m["span_credit/unmatched"] = s.unmatched;
  const double answered = s.critiques - s.failures;
  m["span_credit/with_spans"] = answered > 0 ? s.with_spans / answered : 0.0;
  m["span_credit/flagged_tokens"] = answered > 0 ? s.flagged / answered : 0.0;
  m["span_credit/flagged_share"] = s.policy_tokens > 0 ? s.flagged / s.policy_tokens : 0.0;
  return m;
}

}  // namespace rlf

#include "train/preference_steps.h"

#include <cmath>

#include <torch/torch.h>

#include <algorithm>

#include "train/micro_batch.h"
#include "train/sft_steps.h"
#include "util/error.h"

namespace rlf {

namespace {

// Sum of the log-probs over the response tokens (loss weight > 0) and their count.
std::pair<double, double> response_sum(const Episode& e, const std::vector<float>& logp) {
  double sum = 0, n = 0;
  for (size_t t = 0; t < e.tokens.size(); ++t)
    if (e.loss_weight[t] > 0) sum += logp[t], n += 1;
  return {sum, n};
}

}  // namespace

std::vector<Episode> preference_episodes(const Policy& policy, const PreferenceExample& pair, bool add_special,
                                         int64_t group, const std::vector<std::string>& attributes) {
  std::vector<Episode> out;
  for (const std::string* response : {&pair.chosen, &pair.rejected}) {
    SftExample ex;
    ex.id = pair.id;
    ex.prompt = pair.prompt;
    ex.response = *response;
    Episode e = sft_episode(policy, ex, add_special);
    e.group = group;
    e.reward = response == &pair.chosen ? 1.0 : 0.0;
    const auto& rated = response == &pair.chosen ? pair.chosen_ratings : pair.rejected_ratings;
    for (const std::string& a : attributes) {
      const auto it = rated.find(a);
      e.ratings.push_back(it == rated.end() ? std::nanf("") : static_cast<float>(it->second));
    }
    out.push_back(std::move(e));
  }
  return out;
}

std::vector<std::vector<float>> preference_reference_logprobs(const Policy& policy,
                                                              const std::vector<PreferenceExample>& pairs,
                                                              bool add_special, CausalLMImpl& reference,
                                                              int64_t micro_batch_size) {
  check(!pairs.empty(), "preference data: no training pairs");
  std::vector<std::vector<float>> out;
  // In chunks, so only a chunk's episodes are held at once.
  const size_t chunk = 512;
  for (size_t i0 = 0; i0 < pairs.size(); i0 += chunk) {
    std::vector<Episode> eps;
    for (size_t i = i0; i < std::min(pairs.size(), i0 + chunk); ++i)
      for (Episode& e : preference_episodes(policy, pairs[i], add_special, 0)) eps.push_back(std::move(e));
    std::vector<const Episode*> view;
    for (const Episode& e : eps) view.push_back(&e);
    for (auto& lp : recompute_logprobs(reference, view, micro_batch_size, LogprobScope::FromFirstWeighted))
      out.push_back(std::move(lp));
  }
  return out;
}

Json PreferenceMetrics::to_json() const {
  return {{"pairs", n_pairs}, {"accuracy", accuracy}, {"margin", margin}, {"logp_accuracy", logp_accuracy}, {"loss", loss}};
}

PreferenceMetrics measure_preferences(const Policy& policy, CausalLMImpl& model, CausalLMImpl* reference,
                                      const std::vector<PreferenceExample>& pairs,
                                      const algo::PreferenceLossOptions& options, bool add_special,
                                      int64_t micro_batch_size) {
  PreferenceMetrics m;
  if (pairs.empty()) return m;
  check(reference || options.reference_free(), "measure_preferences: preference.loss = \"",
        algo::preference_loss_name(options.loss), "\" needs a reference model");
  std::vector<Episode> eps;
  for (size_t i = 0; i < pairs.size(); ++i)
    for (Episode& e : preference_episodes(policy, pairs[i], add_special, static_cast<int64_t>(i))) eps.push_back(std::move(e));
  std::vector<const Episode*> view;
  for (const Episode& e : eps) view.push_back(&e);
  const auto lp = recompute_logprobs(model, view, micro_batch_size, LogprobScope::FromFirstWeighted);
  std::vector<std::vector<float>> ref;
  if (reference) ref = recompute_logprobs(*reference, view, micro_batch_size, LogprobScope::FromFirstWeighted);
  const int64_t P = static_cast<int64_t>(pairs.size());
  std::vector<double> pc(P), pr(P), rc(P, 0), rr(P, 0), lc(P), lr(P);
  for (int64_t i = 0; i < P; ++i) {
    std::tie(pc[i], lc[i]) = response_sum(eps[2 * i], lp[2 * i]);
    std::tie(pr[i], lr[i]) = response_sum(eps[2 * i + 1], lp[2 * i + 1]);
    if (reference) rc[i] = response_sum(eps[2 * i], ref[2 * i]).first, rr[i] = response_sum(eps[2 * i + 1], ref[2 * i + 1]).first;
  }
  auto f64 = [](const std::vector<double>& v) { return torch::tensor(v, torch::TensorOptions().dtype(torch::kFloat64)); };
  algo::PairLogps p{f64(pc), f64(pr), f64(rc), f64(rr), f64(lc), f64(lr)};
  algo::PreferenceLossOptions scoring = options;
  torch::Tensor loss;
  if (options.loss == algo::PreferenceLoss::Sppo) {
    // The pairs as groups of two: win rates 1 and 0.
    scoring.loss = algo::PreferenceLoss::Sigmoid;  // its implicit rewards beta * (pi - ref) are SPPO's too
    loss = algo::sppo_loss(torch::cat({p.chosen - p.ref_chosen, p.rejected - p.ref_rejected}),
                           torch::cat({torch::ones({P}, torch::kFloat64), torch::zeros({P}, torch::kFloat64)}), options.beta)
               .view({2, P})
               .mean(0);  // the trainer's mean over rows
  } else {
    loss = algo::pairwise_preference_loss(p, options);
  }
  const auto [c, r] = algo::implicit_rewards(p, scoring);
  m.n_pairs = P;
  m.accuracy = (c > r).to(torch::kFloat64).mean().item<double>();
  m.margin = (c - r).mean().item<double>();
  m.logp_accuracy = (p.chosen / p.chosen_len > p.rejected / p.rejected_len).to(torch::kFloat64).mean().item<double>();
  m.loss = loss.mean().item<double>();
  return m;
}

}  // namespace rlf

#include "train/perf_metrics.h"

#include "model/flops.h"

namespace rlf {

namespace {

// Where a pass computes next-token logits: from the episode's first
// loss-weighted token on. The update's heads skip the columns before it (the
// prompt; train/trainer.cpp), the reference's pass likewise
// (LogprobScope::FromFirstWeighted), and sampling computes one row per
// generated token.
size_t first_weighted(const Episode& e) {
  for (size_t t = 0; t < e.loss_weight.size() && t < e.tokens.size(); ++t)
    if (e.loss_weight[t] > 0) return t;
  return e.tokens.size();
}

// Mean classifier rows per token (over all `tokens`, prompts included): none
// before the first weighted token; from it on the vocabulary, or with
// `over_kept` the kept ids and the target where a token has a kept set.
double classifier_rows(const ModelConfig& c, const std::vector<Episode>& episodes, double tokens, bool over_kept) {
  const double V = static_cast<double>(c.vocab_size);
  double rows = 0;
  for (const Episode& e : episodes) {
    const size_t n = e.tokens.size(), k = n && over_kept ? e.sampling_mask_id.size() / n : 0;
    for (size_t t = first_weighted(e); t < n; ++t) {
      double kept = 0;
      for (size_t j = 0; j < k; ++j) kept += e.sampling_mask_id[t * k + j] >= 0 ? 1.0 : 0.0;
      rows += kept > 0 ? kept + 1.0 : V;
    }
  }
  return tokens > 0 ? rows / tokens : V;
}

}  // namespace

void StepPerf::add_metrics(const std::vector<Episode>& episodes, Json& m) const {
  double tokens = 0;
  for (const Episode& e : episodes) tokens += static_cast<double>(e.tokens.size());
  const double update_s = m.value("time/update_s", 0.0), step_s = m.value("time/step_s", 0.0);
  if (update_s > 0) m["perf/update_tokens_per_s"] = tokens * static_cast<double>(epochs) / update_s;
  if (peak_flops <= 0 || episodes.empty()) return;
  const double mean_len = tokens / static_cast<double>(episodes.size());
  const double rows = classifier_rows(config, episodes, tokens, kept_set_logprobs);
  const double update = training_flops(config, tokens, mean_len, full, rows) * static_cast<double>(epochs);
  const double forward = forward_flops(config, tokens, mean_len, classifier_rows(config, episodes, tokens, false));
  const bool sampled = m.contains("rollout/generated_tokens");
  const double step = update + (sampled ? forward : 0.0) + (reference ? forward : 0.0);
  m["perf/peak_gflops"] = peak_flops / 1e9;
  if (update_s > 0) m["perf/mfu_fwd_bwd"] = update / (update_s * peak_flops);
  if (step_s > 0) m["perf/mfu_wall"] = step / (step_s * peak_flops);
}

}  // namespace rlf

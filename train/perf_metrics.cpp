#include "train/perf_metrics.h"

#include "model/flops.h"

namespace rlf {

void StepPerf::add_metrics(const std::vector<Episode>& episodes, Json& m) const {
  double tokens = 0;
  for (const Episode& e : episodes) tokens += static_cast<double>(e.tokens.size());
  const double update_s = m.value("time/update_s", 0.0), step_s = m.value("time/step_s", 0.0);
  if (update_s > 0) m["perf/update_tokens_per_s"] = tokens * static_cast<double>(epochs) / update_s;
  if (peak_flops <= 0 || episodes.empty()) return;
  const double mean_len = tokens / static_cast<double>(episodes.size());
  const double update = training_flops(config, tokens, mean_len, full) * static_cast<double>(epochs);
  const double forward = forward_flops(config, tokens, mean_len);
  const bool sampled = m.contains("rollout/generated_tokens");
  const double step = update + (sampled ? forward : 0.0) + (reference ? forward : 0.0);
  m["perf/peak_gflops"] = peak_flops / 1e9;
  if (update_s > 0) m["perf/mfu_fwd_bwd"] = update / (update_s * peak_flops);
  if (step_s > 0) m["perf/mfu_wall"] = step / (step_s * peak_flops);
}

}  // namespace rlf

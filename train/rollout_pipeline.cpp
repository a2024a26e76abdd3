// The asynchronous rollout schedule; see rollout_pipeline.h.
#include "train/rollout_pipeline.h"

#include <utility>

#include "util/error.h"

namespace rlf {

RolloutPipeline::RolloutPipeline(CausalLM live, CausalLM rollout, int64_t depth, std::function<bool(int64_t)> is_drain,
                                 int64_t end, Produce produce)
    : live_(std::move(live)),
      rollout_(std::move(rollout)),
      depth_(depth),
      is_drain_(std::move(is_drain)),
      end_(end),
      produce_(std::move(produce)) {
  check(depth_ >= 1, "rollout.max_staleness must be >= 1 for asynchronous rollouts (0 = synchronous), got ", depth_);
}

RolloutPipeline::~RolloutPipeline() { wait_idle(); }

void RolloutPipeline::wait_idle() {
  for (auto& s : inflight_) s.result.wait();
}

void RolloutPipeline::launch(int64_t step, int64_t at, int32_t version) {
  std::vector<torch::Tensor> weights;
  {
    torch::NoGradGuard ng;
    for (const auto& p : live_->parameters()) weights.push_back(p.detach().clone());
  }
  std::shared_future<RolloutBatch> previous = inflight_.empty() ? std::shared_future<RolloutBatch>() : inflight_.back().result;
  auto task = [this, step, at, version, weights = std::move(weights), previous]() {
    if (previous.valid()) previous.wait();  // one batch after another, in step order
    {
      torch::NoGradGuard ng;
      auto params = rollout_->parameters();
      for (size_t i = 0; i < params.size(); ++i) params[i].copy_(weights[i]);
    }
    RolloutBatch b = produce_(step, version);
    b.sampled_at = at;
    return b;
  };
  inflight_.push_back({step, std::async(std::launch::async, std::move(task)).share()});
  launched_ = step;
}

RolloutBatch RolloutPipeline::take(int64_t step, int32_t version) {
  if (inflight_.empty()) launch(step, step, version);  // a drain point (or the first step): sampled now
  check(inflight_.front().step == step, "rollout pipeline: asked for batch ", step, " but the next one is ",
        inflight_.front().step);
  // The batches ahead, launched before waiting so that they overlap with this step's update.
  for (int64_t m = std::max(launched_ + 1, step + 1); m <= step + depth_ && m < end_; ++m) {
    if (is_drain_(m)) break;  // a drain point in (step, m]: m and later wait for it
    launch(m, step, version);
  }
  Slot s = std::move(inflight_.front());
  inflight_.pop_front();
  return s.result.get();
}

}  // namespace rlf

// Reducer: the data-parallel seam. Everything global to an optimisation step
// passes through it between the ranks' local work and the optimizer step:
//   - loss normalisers (each loss term's token and sequence totals),
//   - batch statistics of advantages (batch-std and REINFORCE++ whitening,
//     algorithms/advantages.h BatchSum),
//   - reward and metric sums (means over the global batch),
//   - the gradient (summed: every rank's loss is already divided by the
//     global totals, so the sum is the gradient of the global loss; the
//     norm clip then sees the same global gradient on every rank).
// In one process it is the identity (LocalReducer). The scale-out issue
// implements it with c10d (Gloo on CPU, NCCL on GPU); only the rank that
// writes() writes metrics, samples and checkpoints.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <span>
#include <vector>

#include "algorithms/advantages.h"

namespace rlf {

class Reducer {
 public:
  virtual ~Reducer() = default;
  virtual int64_t rank() const = 0;
  virtual int64_t world_size() const = 0;
  // True for the one rank that writes files (metrics, samples, checkpoints).
  bool writes() const { return rank() == 0; }
  // Sums `values` element-wise across ranks, in place.
  virtual void sum(std::span<double> values) = 0;
  // The element-wise maximum across ranks, in place (minima: negate first).
  virtual void max(std::span<double> values) = 0;
  // Sums the gradients of `params` across ranks, in place (before the optimizer step).
  virtual void sum_gradients(const std::vector<torch::Tensor>& params) = 0;
  // The batch-statistics hook for algorithms/ (empty when there is one rank).
  algo::BatchSum batch_sum() {
    if (world_size() == 1) return {};
    return [this](std::span<double> v) { sum(v); };
  }
};

// One process: every reduction is the identity.
class LocalReducer final : public Reducer {
 public:
  int64_t rank() const override { return 0; }
  int64_t world_size() const override { return 1; }
  void sum(std::span<double>) override {}
  void max(std::span<double>) override {}
  void sum_gradients(const std::vector<torch::Tensor>&) override {}
};

}  // namespace rlf

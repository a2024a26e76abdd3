// Reducer: the data-parallel seam. Everything global to an optimisation step
// passes through it between the ranks' local work and the optimizer step:
//   - loss normalisers (each loss term's token and sequence totals),
//   - batch statistics of advantages (batch-std and REINFORCE++ whitening,
//     algorithms/advantages.h BatchSum),
//   - reward and metric sums (means over the global batch),
//   - the gradient (summed: every rank's loss is already divided by the
//     global totals, so the sum is the gradient of the global loss; the
//     norm clip then sees the same global gradient on every rank).
// In one process it is the identity (LocalReducer); across processes
// train/c10d_reducer.h implements it with c10d collectives (Gloo). Only the
// rank that writes() writes metrics, samples and checkpoints.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "algorithms/advantages.h"
#include "util/double_fields.h"

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
  // Sums (maxima of) every field of a struct of named doubles across ranks in
  // one call (util/double_fields.h): statistics by name, not by index.
  template <DoubleFields S>
  void sum_fields(S& s) { over_fields(s, [this](std::span<double> v) { sum(v); }); }
  template <DoubleFields S>
  void sum_fields(std::vector<S>& rows) { over_fields(rows, [this](std::span<double> v) { sum(v); }); }
  template <DoubleFields S>
  void max_fields(S& s) { over_fields(s, [this](std::span<double> v) { max(v); }); }
  // Sums the gradients of `params` across ranks, in place (before the optimizer
  // step). A parameter with a gradient on some rank gets the sum on every rank
  // (zeros from the others); one with none anywhere keeps none.
  virtual void sum_gradients(const std::vector<torch::Tensor>& params) = 0;
  // Every rank's `value`, in rank order (the same result on every rank).
  virtual std::vector<std::string> all_gather(const std::string& value) = 0;
  // Bytes this rank has put into collectives so far (payload, not wire traffic; 0 in one process).
  virtual double payload_bytes() const { return 0; }
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
  std::vector<std::string> all_gather(const std::string& value) override { return {value}; }
};

// A rank's share of a step's batch: the positions p with p % world == rank.
// Every step source draws the same global batch on every rank and keeps its
// share, with the position as the group id (Trainer::update's slots).
struct Shard {
  int64_t rank = 0;
  int64_t world = 1;
  bool owns(size_t position) const { return static_cast<int64_t>(position % static_cast<size_t>(world)) == rank; }
  // Positions [0, n) this rank owns.
  int64_t count(int64_t n) const { return n / world + (rank < n % world ? 1 : 0); }
};
inline Shard shard_of(const Reducer& r) { return {r.rank(), r.world_size()}; }

// Start-up check: every rank runs the same config and rlf build. Throws
// rlf::Error on every rank, naming the ranks that differ from rank 0, when the
// fingerprints differ.
void check_same_config(Reducer& reducer, const std::string& fingerprint);

// Replicas stay identical by construction (the same summed gradient and the
// same optimizer step everywhere); this compares a checksum of `params` across
// ranks and throws rlf::Error on every rank, naming `step`, when they differ.
void check_replicas_agree(Reducer& reducer, const std::vector<torch::Tensor>& params, int64_t step);

}  // namespace rlf

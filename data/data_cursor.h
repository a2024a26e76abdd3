// DataCursor: the order in which a run visits a dataset, as batches of record
// indices. Epoch e visits every index once, in an order shuffled with
// derive_seed(seed, "epoch", e) (or in dataset order without shuffle); a
// batch that reaches the end of an epoch is completed from the start of the
// next, so every batch has batch_size indices (an index can then appear
// twice in the batch that straddles the boundary, or when batch_size exceeds
// the dataset).
//
// The state is (epoch, position, seed) plus the dataset size and the shuffle
// flag: state() serialises it, restore() continues exactly where the saved
// cursor stopped: a restored cursor yields the same batches the original would
// have. The saved seed replaces the options' seed; a different dataset size or
// shuffle flag is an error (the order would not be the same run's).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "util/json_util.h"

namespace rlf {

struct DataCursorOptions {
  size_t batch_size = 8;  // indices per batch (prompts per step)
  bool shuffle = true;    // reshuffle every epoch; false: dataset order every epoch
  uint64_t seed = 0;      // seeds the epoch orders
};

class DataCursor {
 public:
  // Throws rlf::Error for an empty dataset or batch_size 0.
  DataCursor(size_t n_items, const DataCursorOptions& options);

  // The next batch_size indices into the dataset.
  std::vector<size_t> next_batch();

  // The next single index (next_batch() is batch_size of these): a caller
  // that skips some indices (data/prompt_pool.h) draws one at a time.
  size_t next();

  uint64_t epoch() const { return epoch_; }        // epochs completed so far
  uint64_t position() const { return position_; }  // indices consumed in the current epoch
  uint64_t seed() const { return seed_; }
  size_t n_items() const { return n_items_; }

  // {"format":"rlf.data_cursor","version":1,"epoch":..,"position":..,"seed":..,"n_items":..,"shuffle":..}
  Json state() const;

  // Continues from a state() of a cursor over the same dataset. Throws
  // rlf::Error naming the field when the state is malformed or does not fit.
  void restore(const Json& state);

 private:
  void build_order();  // order_ for epoch_

  size_t n_items_;
  size_t batch_size_;
  bool shuffle_;
  uint64_t seed_;
  uint64_t epoch_ = 0;
  uint64_t position_ = 0;
  std::vector<size_t> order_;  // this epoch's visiting order
};

}  // namespace rlf

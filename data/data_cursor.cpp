// Seeded, resumable batch order over a dataset (see data_cursor.h).
#include "data/data_cursor.h"

#include <numeric>

#include "data/seeded_rng.h"

namespace rlf {

namespace {
constexpr const char* kCursorFormat = "rlf.data_cursor";
constexpr int kCursorVersion = 1;
}  // namespace

DataCursor::DataCursor(size_t n_items, const DataCursorOptions& o)
    : n_items_(n_items), batch_size_(o.batch_size), shuffle_(o.shuffle), seed_(o.seed) {
  check(n_items > 0, "data cursor: the dataset is empty");
  check(o.batch_size > 0, "data cursor: batch_size must be positive");
  build_order();
}

void DataCursor::build_order() {
  if (shuffle_) {
    order_ = shuffled_indices(n_items_, derive_seed(seed_, "epoch", epoch_));
  } else {
    order_.resize(n_items_);
    std::iota(order_.begin(), order_.end(), size_t{0});
  }
}

size_t DataCursor::next() {
  if (position_ == n_items_) {
    ++epoch_;
    position_ = 0;
    build_order();
  }
  return order_[position_++];
}

std::vector<size_t> DataCursor::next_batch() {
  std::vector<size_t> batch;
  batch.reserve(batch_size_);
  while (batch.size() < batch_size_) batch.push_back(next());
  return batch;
}

Json DataCursor::state() const {
  return {{"format", kCursorFormat}, {"version", kCursorVersion}, {"epoch", epoch_},     {"position", position_},
          {"seed", seed_},     {"n_items", n_items_}, {"shuffle", shuffle_}};
}

void DataCursor::restore(const Json& s) {
  const std::string src = "data cursor state";
  check(json_require<std::string>(s, "format", src) == kCursorFormat, src, ": field 'format' is not \"", kCursorFormat, "\"");
  int version = json_require<int>(s, "version", src);
  check(version == kCursorVersion, src, ": version ", version, " is not supported (expected ", kCursorVersion, ")");
  auto n_items = json_require<uint64_t>(s, "n_items", src);
  check(n_items == n_items_, src, ": saved for a dataset of ", n_items, " records, this one has ", n_items_,
        "; resume with the same dataset and options");
  bool shuffle = json_require<bool>(s, "shuffle", src);
  check(shuffle == shuffle_, src, ": saved with shuffle = ", shuffle ? "true" : "false", ", now ",
        shuffle_ ? "true" : "false", "; resume with the same setting");
  auto position = json_require<uint64_t>(s, "position", src);
  check(position <= n_items_, src, ": position ", position, " is beyond the dataset's ", n_items_, " records");
  epoch_ = json_require<uint64_t>(s, "epoch", src);
  seed_ = json_require<uint64_t>(s, "seed", src);
  position_ = position;
  build_order();
}

}  // namespace rlf

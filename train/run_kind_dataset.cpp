#include "train/run_kind_dataset.h"

namespace rlf {

DatasetSource::DatasetSource(size_t n_examples, int64_t batch_size, uint64_t seed, Shard shard, EpisodesOf episodes_of)
    : shard_(shard),
      episodes_of_(std::move(episodes_of)),
      cursor_(n_examples, DataCursorOptions{.batch_size = static_cast<size_t>(batch_size), .shuffle = true, .seed = seed}) {}

std::vector<Episode> DatasetSource::next() {
  std::vector<Episode> out;
  const std::vector<size_t> batch = cursor_.next_batch();
  for (size_t k = 0; k < batch.size(); ++k) {
    if (!shard_.owns(k)) continue;
    for (Episode& e : episodes_of_(batch[k], static_cast<int64_t>(k))) out.push_back(std::move(e));
  }
  return out;
}

}  // namespace rlf

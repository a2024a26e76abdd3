// DatasetSource: the step source of the offline kinds of run (SFT, DPO,
// reward models, process reward models). Each step is the next batch of a
// seeded cursor over the kind's examples (each epoch reshuffled), of which
// this rank keeps its positions (Shard); every kept example becomes its
// episodes through the kind's `episodes_of(index, position)` — one SFT
// episode, a preference pair's two, a step-labelled solution's one.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "data/data_cursor.h"
#include "env/episode.h"
#include "train/reducer.h"

namespace rlf {

class DatasetSource {
 public:
  // The episodes of example `index`, at `position` in its batch (the group id of the kinds that have one per example).
  using EpisodesOf = std::function<std::vector<Episode>(size_t index, int64_t position)>;

  // `n_examples` > 0; batches of `batch_size` positions drawn with `seed`.
  DatasetSource(size_t n_examples, int64_t batch_size, uint64_t seed, Shard shard, EpisodesOf episodes_of);

  std::vector<Episode> next();
  DataCursor& cursor() { return cursor_; }

 private:
  Shard shard_;
  EpisodesOf episodes_of_;
  DataCursor cursor_;
};

}  // namespace rlf

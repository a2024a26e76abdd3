// The tail every file-or-generator dataset of records shares: a seeded
// shuffle, a cap on the records kept, and the last eval_size records held
// out (preference pairs, step-labelled solutions).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "data/seeded_rng.h"
#include "util/error.h"

namespace rlf {

// (training, held out) from `all`: shuffled once from `seed` when `shuffle`,
// cut to max_records (0 = all), the last eval_size held out. Throws naming
// `source` and `key` (the eval_size key the user wrote) when nothing is left
// to train on; `what` names the records ("pairs").
template <typename T>
std::pair<std::vector<T>, std::vector<T>> split_held_out(std::vector<T> all, bool shuffle, uint64_t seed,
                                                         int64_t max_records, int64_t eval_size,
                                                         const std::string& source, const std::string& what,
                                                         const std::string& key) {
  if (shuffle) SeededRng(derive_seed(seed, "shuffle")).shuffle(all);
  if (max_records > 0 && static_cast<size_t>(max_records) < all.size()) all.resize(static_cast<size_t>(max_records));
  check(eval_size >= 0 && static_cast<size_t>(eval_size) < all.size(), source, ": eval_size = ", eval_size,
        " leaves no training ", what, " (", all.size(), " ", what, "); lower ", key);
  const auto n_train = static_cast<std::ptrdiff_t>(all.size() - static_cast<size_t>(eval_size));
  std::vector<T> eval(std::make_move_iterator(all.begin() + n_train), std::make_move_iterator(all.end()));
  all.resize(static_cast<size_t>(n_train));
  return {std::move(all), std::move(eval)};
}

}  // namespace rlf

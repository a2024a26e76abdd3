// KVCache: per-layer key/value storage for incremental decoding.
//
// Layout per layer: keys/values [n_rows, n_kv_heads, max_len, head_dim] in the
// model's dtype and device. A "row" holds one sequence; rows are independent,
// so sequences of different lengths (ragged prompts) share one cache without
// padding: each forward step writes its keys at the tokens' own positions and
// attends only to keys at positions <= the query's position.
//
// Shared prefixes (a group's prompt): rows may share one read-only prefix, a
// one-row KVCache that a prefill filled with positions [0, P). Such a row
// reads those positions from the prefix and keeps position p >= P in its own
// slot p - P, so G samples of one prompt hold one copy of the prompt's keys
// and values, and each row's own slots need only the tokens after it. The
// prefix is freed when the last row that uses it lets go (set_prefix with
// null, or release_rows).
//
// Memory is reserved by the constructor (or reserve()) and returned by
// release(): the rollout engine releases it before a training update.
#pragma once

#include <torch/torch.h>

#include <memory>
#include <vector>

#include "model/config.h"

namespace rlf {

class KVCache {
 public:
  KVCache() = default;
  // Allocates n_rows x max_len slots for every layer.
  KVCache(const ModelConfig& config, int64_t n_rows, int64_t max_len, torch::ScalarType dtype, torch::Device device);

  bool reserved() const { return !keys_.empty(); }
  int64_t n_rows() const { return n_rows_; }
  int64_t max_len() const { return max_len_; }  // own slots per row (positions after its prefix)
  // Bytes held now: every row's slots plus each live shared prefix once.
  int64_t bytes() const;
  // The most bytes() has been since the cache was reserved.
  int64_t peak_bytes() const { return std::max(peak_bytes_, bytes()); }

  // Frees all storage.
  void release();

  // Layer storage (full, all rows).
  torch::Tensor& keys(int64_t layer) { return keys_[layer]; }
  torch::Tensor& values(int64_t layer) { return values_[layer]; }
  const torch::Tensor& keys(int64_t layer) const { return keys_[layer]; }
  const torch::Tensor& values(int64_t layer) const { return values_[layer]; }

  // The cache restricted to rows [row0, row0 + n): a view sharing storage, so
  // a forward on the view writes into this cache. The view carries the rows'
  // prefixes.
  KVCache rows(int64_t row0, int64_t n);

  // Rows [row0, row0 + n) read positions [0, prefix->max_len()) from
  // `prefix` (a one-row cache, already filled) and hold their later
  // positions in their own slots from 0; null = no prefix (the row's own
  // slots hold every position).
  void set_prefix(int64_t row0, int64_t n, std::shared_ptr<const KVCache> prefix);
  // The prefix of `row` (null if none) and its length (0 if none).
  const KVCache* prefix(int64_t row) const;
  int64_t prefix_len(int64_t row) const;
  // Drops the prefixes of rows [row0, n_rows) (rows no longer in use).
  void release_rows(int64_t row0);

  // Copies own slots [0, len) of row `src` into rows `dst`..`dst + n - 1`
  // (rows without a prefix: a prompt prefilled once, copied to a group).
  void broadcast_prefix(int64_t src, int64_t dst, int64_t n, int64_t len);

  // Moves row `src` to row `dst` (batch compaction): its prefix and its own
  // slots holding positions [0, len).
  void move_row(int64_t src, int64_t dst, int64_t len);

 private:
  void note_peak();

  int64_t n_rows_ = 0;
  int64_t max_len_ = 0;
  int64_t peak_bytes_ = 0;
  std::vector<torch::Tensor> keys_;    // per layer [n_rows, n_kv, max_len, hd]
  std::vector<torch::Tensor> values_;  // per layer [n_rows, n_kv, max_len, hd]
  std::vector<std::shared_ptr<const KVCache>> prefix_;  // per row; null = none
};

}  // namespace rlf

// KVCache: per-layer key/value storage for incremental decoding.
//
// Layout per layer: keys/values [n_rows, n_kv_heads, max_len, head_dim] in the
// model's dtype and device. A "row" holds one sequence; rows are independent,
// so sequences of different lengths (ragged prompts) share one cache without
// padding: each forward step writes its keys at the tokens' own positions and
// attends only to keys at positions <= the query's position.
//
// Memory is reserved by the constructor (or reserve()) and returned by
// release(): the rollout engine releases it before a training update.
#pragma once

#include <torch/torch.h>

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
  int64_t max_len() const { return max_len_; }
  int64_t bytes() const;

  // Frees all storage.
  void release();

  // Layer storage (full, all rows).
  torch::Tensor& keys(int64_t layer) { return keys_[layer]; }
  torch::Tensor& values(int64_t layer) { return values_[layer]; }

  // The cache restricted to rows [row0, row0 + n): a view sharing storage, so
  // a forward on the view writes into this cache.
  KVCache rows(int64_t row0, int64_t n);

  // Copies positions [0, len) of row `src` into rows `dst`..`dst + n - 1`
  // (prefix sharing: one prompt prefill feeds a whole group).
  void broadcast_prefix(int64_t src, int64_t dst, int64_t n, int64_t len);

  // Copies positions [0, len) of row `src` into row `dst` (batch compaction).
  void move_row(int64_t src, int64_t dst, int64_t len);

 private:
  int64_t n_rows_ = 0;
  int64_t max_len_ = 0;
  std::vector<torch::Tensor> keys_;    // per layer [n_rows, n_kv, max_len, hd]
  std::vector<torch::Tensor> values_;  // per layer [n_rows, n_kv, max_len, hd]
};

}  // namespace rlf

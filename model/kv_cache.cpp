#include "model/kv_cache.h"

#include "util/error.h"

namespace rlf {

KVCache::KVCache(const ModelConfig& config, int64_t n_rows, int64_t max_len, torch::ScalarType dtype,
                 torch::Device device)
    : n_rows_(n_rows), max_len_(max_len) {
  check(n_rows > 0 && max_len > 0, "KVCache: n_rows and max_len must be > 0 (got ", n_rows, ", ", max_len, ")");
  auto opts = torch::TensorOptions().dtype(dtype).device(device);
  const int64_t hd = config.resolved_head_dim();
  for (int64_t l = 0; l < config.num_hidden_layers; ++l) {
    keys_.push_back(torch::zeros({n_rows, config.num_key_value_heads, max_len, hd}, opts));
    values_.push_back(torch::zeros({n_rows, config.num_key_value_heads, max_len, hd}, opts));
  }
}

int64_t KVCache::bytes() const {
  int64_t total = 0;
  for (const auto& t : keys_) total += t.numel() * static_cast<int64_t>(t.element_size());
  for (const auto& t : values_) total += t.numel() * static_cast<int64_t>(t.element_size());
  return total;
}

void KVCache::release() {
  keys_.clear();
  values_.clear();
  n_rows_ = 0;
  max_len_ = 0;
}

KVCache KVCache::rows(int64_t row0, int64_t n) {
  check(row0 >= 0 && n > 0 && row0 + n <= n_rows_, "KVCache::rows: [", row0, ", ", row0 + n, ") out of range (",
        n_rows_, " rows)");
  KVCache view;
  view.n_rows_ = n;
  view.max_len_ = max_len_;
  for (size_t l = 0; l < keys_.size(); ++l) {
    view.keys_.push_back(keys_[l].narrow(0, row0, n));
    view.values_.push_back(values_[l].narrow(0, row0, n));
  }
  return view;
}

void KVCache::broadcast_prefix(int64_t src, int64_t dst, int64_t n, int64_t len) {
  if (n <= 0 || len <= 0) return;
  for (size_t l = 0; l < keys_.size(); ++l) {
    for (auto* store : {&keys_[l], &values_[l]}) {
      auto from = store->narrow(0, src, 1).narrow(2, 0, len);
      store->narrow(0, dst, n).narrow(2, 0, len).copy_(from.expand({n, -1, -1, -1}));
    }
  }
}

void KVCache::move_row(int64_t src, int64_t dst, int64_t len) {
  if (src == dst || len <= 0) return;
  for (size_t l = 0; l < keys_.size(); ++l) {
    for (auto* store : {&keys_[l], &values_[l]}) {
      store->narrow(0, dst, 1).narrow(2, 0, len).copy_(store->narrow(0, src, 1).narrow(2, 0, len));
    }
  }
}

}  // namespace rlf

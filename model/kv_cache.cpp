#include "model/kv_cache.h"

#include <algorithm>

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
  prefix_.assign(static_cast<size_t>(n_rows), nullptr);
  peak_bytes_ = bytes();
}

int64_t KVCache::bytes() const {
  int64_t total = 0;
  for (const auto& t : keys_) total += t.numel() * static_cast<int64_t>(t.element_size());
  for (const auto& t : values_) total += t.numel() * static_cast<int64_t>(t.element_size());
  std::vector<const KVCache*> seen;
  for (const auto& p : prefix_) {
    if (!p || std::find(seen.begin(), seen.end(), p.get()) != seen.end()) continue;
    seen.push_back(p.get());
    total += p->bytes();
  }
  return total;
}

void KVCache::note_peak() { peak_bytes_ = std::max(peak_bytes_, bytes()); }

void KVCache::release() {
  keys_.clear();
  values_.clear();
  prefix_.clear();
  n_rows_ = 0;
  max_len_ = 0;
  peak_bytes_ = 0;
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
  view.prefix_.assign(prefix_.begin() + row0, prefix_.begin() + row0 + n);
  return view;
}

void KVCache::set_prefix(int64_t row0, int64_t n, std::shared_ptr<const KVCache> prefix) {
  check(row0 >= 0 && n >= 0 && row0 + n <= n_rows_, "KVCache::set_prefix: rows [", row0, ", ", row0 + n,
        ") out of range (", n_rows_, " rows)");
  if (prefix) {
    check(prefix->n_rows() == 1 && prefix->keys_.size() == keys_.size() && !prefix->prefix(0),
          "KVCache::set_prefix: a prefix is one row of a cache of the same model, without a prefix of its own");
    check(prefix->keys_[0].scalar_type() == keys_[0].scalar_type() && prefix->keys_[0].device() == keys_[0].device(),
          "KVCache::set_prefix: the prefix's dtype/device differ from the cache's");
  }
  for (int64_t r = row0; r < row0 + n; ++r) prefix_[r] = prefix;
  if (prefix) note_peak();
}

const KVCache* KVCache::prefix(int64_t row) const {
  return row >= 0 && row < static_cast<int64_t>(prefix_.size()) ? prefix_[row].get() : nullptr;
}

int64_t KVCache::prefix_len(int64_t row) const {
  const KVCache* p = prefix(row);
  return p ? p->max_len() : 0;
}

void KVCache::release_rows(int64_t row0) {
  for (int64_t r = std::max<int64_t>(0, row0); r < static_cast<int64_t>(prefix_.size()); ++r) prefix_[r] = nullptr;
}

void KVCache::broadcast_prefix(int64_t src, int64_t dst, int64_t n, int64_t len) {
  if (n <= 0 || len <= 0) return;
  check(!prefix(src), "KVCache::broadcast_prefix: row ", src, " reads a shared prefix; share it with set_prefix");
  for (size_t l = 0; l < keys_.size(); ++l) {
    for (auto* store : {&keys_[l], &values_[l]}) {
      auto from = store->narrow(0, src, 1).narrow(2, 0, len);
      store->narrow(0, dst, n).narrow(2, 0, len).copy_(from.expand({n, -1, -1, -1}));
    }
  }
}

void KVCache::move_row(int64_t src, int64_t dst, int64_t len) {
  if (src == dst) return;
  const int64_t own = len - prefix_len(src);
  if (own > 0) {
    for (size_t l = 0; l < keys_.size(); ++l) {
      for (auto* store : {&keys_[l], &values_[l]}) {
        store->narrow(0, dst, 1).narrow(2, 0, own).copy_(store->narrow(0, src, 1).narrow(2, 0, own));
      }
    }
  }
  prefix_[dst] = std::move(prefix_[src]);
  prefix_[src] = nullptr;
}

}  // namespace rlf

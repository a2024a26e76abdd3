// A small, portable, seeded random generator for data order and synthetic
// tasks. std::shuffle and std::uniform_int_distribution are implementation-
// defined, so a run's data order would change with the standard library; this
// one (SplitMix64 + rejection sampling + Fisher-Yates) gives the same sequence
// everywhere for the same seed. Streams are derived from (seed, purpose) with
// derive_seed() so that, e.g., the split and the epoch order never share draws.
#pragma once

#include "util/hash.h"

#include <cstdint>
#include <numeric>
#include <string_view>
#include <vector>

namespace rlf {

class SeededRng {
 public:
  explicit SeededRng(uint64_t seed) : state_(seed) {}

  // SplitMix64 (Steele, Lea, Flood 2014).
  uint64_t next_u64() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }

  // Uniform in [0, n) without modulo bias; n must be > 0.
  uint64_t below(uint64_t n) {
    uint64_t limit = UINT64_MAX - UINT64_MAX % n;
    uint64_t x = next_u64();
    while (x >= limit) x = next_u64();
    return x % n;
  }

  // Uniform integer in [lo, hi] (inclusive), lo <= hi.
  int64_t uniform_int(int64_t lo, int64_t hi) {
    return lo + static_cast<int64_t>(below(static_cast<uint64_t>(hi - lo) + 1));
  }

  // Uniform in [0, 1).
  double uniform01() { return static_cast<double>(next_u64() >> 11) * 0x1.0p-53; }

  // Fisher-Yates shuffle of `v`.
  template <typename T>
  void shuffle(std::vector<T>& v) {
    for (size_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[below(i)]);
  }

 private:
  uint64_t state_;
};

// A seed for one purpose ("split", "epoch", ...) and index (the epoch number)
// derived from the run's seed, so independent uses never share a stream.
inline uint64_t derive_seed(uint64_t seed, std::string_view purpose, uint64_t index = 0) {
  SeededRng rng(seed ^ fnv1a64(purpose));
  rng.next_u64();
  SeededRng mixed(rng.next_u64() + index * 0xD1B54A32D192ED03ull);
  return mixed.next_u64();
}

// 0, 1, ..., n-1 shuffled with `seed`.
inline std::vector<size_t> shuffled_indices(size_t n, uint64_t seed) {
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), size_t{0});
  SeededRng rng(seed);
  rng.shuffle(order);
  return order;
}

}  // namespace rlf

/* Decoding attention over the KV cache, alone: the part of a batched decoding
 * step that reads the cache (rlf's cpu::attention_forward, cached mode), at the
 * stories110M shape (12 layers, 12 heads of 64), batch B, P cached positions
 * per row, the cache laid out as the engine lays it out ([row, head, slot, i],
 * 80 slots). Prints one JSON line:
 *   ms_per_step       median over 9 passes of all 12 layers
 *   cache_gb_s        keys + values read per step / that time
 *   ms_per_step_hot   the same with every row reading row 0's cache (it stays
 *                     in L2: the compute floor)
 *   ms_per_layer_first, ms_per_layer_again
 *                     one layer's attention, then the same layer's again at
 *                     once (medians over 5 passes of the 12 layers): the
 *                     second reads what the caches kept of the first (a
 *                     layer's cache is 1/12 of the step's bytes)
 * Built without LibTorch, against the kernels themselves:
 *   g++ -std=c++20 -O3 -march=native -fno-math-errno -fno-trapping-math -I. \
 *       bench/decode_attention.cpp model/cpu_kernels.cpp model/cpu_team.cpp -lpthread -o decode_attention
 *   ./decode_attention [B=64] [P=48] [threads=2]
 * Compare with the machine's read bandwidth (bench/membw.c). To time another
 * version of the kernels, build with its model/cpu_kernels.cpp instead
 * (e.g. `git show REV:model/cpu_kernels.cpp > /tmp/k.cpp`). */
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "model/cpu_kernels.h"

namespace {

double median_ms(const std::vector<std::vector<float>>& ck, const std::vector<std::vector<float>>& cv,
                 const std::vector<float>& q, std::vector<float>& out, const std::vector<int64_t>& pos,
                 const rlf::cpu::AttentionShape& sh, int64_t row_stride, int64_t ML) {
  std::vector<double> ms;
  for (int r = 0; r < 9; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    for (size_t l = 0; l < ck.size(); ++l) {
      const rlf::cpu::KeyLayout kv{ck[l].data(), cv[l].data(), row_stride, ML * sh.hd, sh.hd};
      rlf::cpu::attention_forward(q.data(), kv, pos.data(), nullptr, true, sh, out.data(), nullptr);
    }
    ms.push_back(1e3 * std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const long B = argc > 1 ? std::atol(argv[1]) : 64, P = argc > 2 ? std::atol(argv[2]) : 48;
  const int threads = argc > 3 ? std::atoi(argv[3]) : 2;
  const long L = 12, H = 12, hd = 64, ML = 80;
  if (B < 1 || P < 1 || P > ML || threads < 1) {
    std::fprintf(stderr, "usage: decode_attention [B >= 1] [P in 1..%ld] [threads >= 1]\n", ML);
    return 2;
  }
  rlf::cpu::set_kernel_threads(threads);
  std::mt19937 g(9);
  std::normal_distribution<float> d;
  std::vector<std::vector<float>> ck(L), cv(L);
  for (long l = 0; l < L; ++l) {
    ck[l].resize(B * H * ML * hd);
    cv[l].resize(B * H * ML * hd);
    for (auto& x : ck[l]) x = d(g);
    for (auto& x : cv[l]) x = d(g);
  }
  std::vector<float> q(B * H * hd), out(B * H * hd);
  for (auto& x : q) x = d(g);
  const std::vector<int64_t> pos(B, P - 1);
  const rlf::cpu::AttentionShape sh{B, 1, H, H, hd, 0.125f};
  const double ms = median_ms(ck, cv, q, out, pos, sh, H * ML * hd, ML);
  const double hot = median_ms(ck, cv, q, out, pos, sh, 0, ML);
  std::vector<double> first, again;
  for (int r = 0; r < 5; ++r)
    for (long l = 0; l < L; ++l) {
      const rlf::cpu::KeyLayout kv{ck[l].data(), cv[l].data(), H * ML * hd, ML * hd, hd};
      for (auto* into : {&first, &again}) {
        const auto t0 = std::chrono::steady_clock::now();
        rlf::cpu::attention_forward(q.data(), kv, pos.data(), nullptr, true, sh, out.data(), nullptr);
        into->push_back(1e3 * std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      }
    }
  std::sort(first.begin(), first.end());
  std::sort(again.begin(), again.end());
  const double bytes = 2.0 * L * B * H * P * hd * sizeof(float);
  std::printf("{\"batch\": %ld, \"positions\": %ld, \"threads\": %d, \"ms_per_step\": %.3f, \"cache_gb_s\": %.2f, "
              "\"ms_per_step_hot\": %.3f, \"ms_per_layer_first\": %.3f, \"ms_per_layer_again\": %.3f}\n",
              B, P, threads, ms, bytes / ms / 1e6, hot, first[first.size() / 2], again[again.size() / 2]);
  return 0;
}

/* What this CPU's fp32 matrix products can reach, in three layers, each on 1
 * thread and on every thread (std::thread, one per core):
 *   fma          independent fused multiply-adds on registers only: the
 *                vector units' peak, with no load beside them
 *   kernel_MRxNR the inner loop of every blocked matrix product (OpenBLAS's,
 *                BLIS's, rlf's panel kernel): an MR x NR block of C held in
 *                registers, one broadcast of A per row and NR/lanes vector
 *                loads of B per step of k; A and B packed and in L1, so
 *                memory is out of the picture. Three shapes that fit AVX2's
 *                16 registers: 6 x 2 vectors (BLIS's Haswell and Zen
 *                kernels), 4 x 3, and 8 x 1 (one broadcast per FMA)
 *   sgemm_N      OpenBLAS's cblas_sgemm of N x N matrices (what LibTorch's
 *                fp32 linear calls), OPENBLAS_NUM_THREADS from the caller
 * Prints one JSON line: GFLOP/s per measure (median of 5 timings of ~0.2 s),
 * the CPU's model name, the vector width used (256-bit AVX2, or 512-bit
 * where the compiler targets AVX-512F), the best kernel's and sgemm's
 * fraction of the fma peak at the same thread count, and sgemm's fraction
 * of the best kernel. A blocked product can at most reach its kernel's
 * rate; where the kernel is well below the fma peak, the broadcasts and
 * loads it needs per multiply-add bound every library alike.
 * Also clock_ghz: dependent integer adds per second on one thread (one per
 * cycle), the clock the fma peak divides by (flops per cycle = peak / clock).
 * bench/sgemm_peak.py times the same sgemm through torch.mm, without the
 * layers beneath it.
 * Built without LibTorch:
 *   g++ -std=c++20 -O3 -march=native -pthread bench/fp32_ceiling.cpp \
 *       /usr/lib/x86_64-linux-gnu/libopenblas.so.0 -o fp32_ceiling
 *   OPENBLAS_NUM_THREADS=2 ./fp32_ceiling [threads=all cores] [sgemm N=2048, at most 16384]
 * BLIS's sgemm instead (Debian's libblis4-pthread, unpacked, not installed):
 *   apt-get download libblis4-pthread && dpkg -x libblis4-pthread_*.deb blis
 *   B=$PWD/blis/usr/lib/x86_64-linux-gnu/blis-pthread
 *   g++ -std=c++20 -O3 -march=native -pthread bench/fp32_ceiling.cpp $B/libblis.so.4 \
 *       -Wl,-rpath,$B -o fp32_ceiling_blis && BLIS_NUM_THREADS=2 ./fp32_ceiling_blis */
#include <immintrin.h>
#include <sched.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <string>
#include <thread>
#include <vector>

extern "C" void cblas_sgemm(int order, int trans_a, int trans_b, int m, int n, int k, float alpha, const float* a,
                            int lda, const float* b, int ldb, float beta, float* c, int ldc);

namespace {

#if defined(__AVX512F__)
using Vec = __m512;
constexpr int kLanes = 16;
inline Vec vzero() { return _mm512_setzero_ps(); }
inline Vec vset(float x) { return _mm512_set1_ps(x); }
inline Vec vload(const float* p) { return _mm512_load_ps(p); }
inline Vec vbroadcast(const float* p) { return _mm512_set1_ps(*p); }
inline Vec vfma(Vec a, Vec b, Vec c) { return _mm512_fmadd_ps(a, b, c); }
inline float vfirst(Vec v) { return _mm512_cvtss_f32(v); }
inline void vaccumulate(float* p, Vec v) { _mm512_store_ps(p, _mm512_add_ps(_mm512_load_ps(p), v)); }
#else
using Vec = __m256;
constexpr int kLanes = 8;
inline Vec vzero() { return _mm256_setzero_ps(); }
inline Vec vset(float x) { return _mm256_set1_ps(x); }
inline Vec vload(const float* p) { return _mm256_load_ps(p); }
inline Vec vbroadcast(const float* p) { return _mm256_broadcast_ss(p); }
inline Vec vfma(Vec a, Vec b, Vec c) { return _mm256_fmadd_ps(a, b, c); }
inline float vfirst(Vec v) { return _mm256_cvtss_f32(v); }
inline void vaccumulate(float* p, Vec v) { _mm256_store_ps(p, _mm256_add_ps(_mm256_load_ps(p), v)); }
#endif

constexpr int kChains = 12;  // independent accumulators: > FMA latency x units
constexpr int kDepth = 256;  // k of the packed blocks (A 8 x 256, B 256 x 24: in L1)

// `iters` rounds of kChains fused multiply-adds; returns a value that keeps them.
__attribute__((noinline)) float fma_loop(long iters) {
  Vec acc[kChains];
  const Vec m = vset(0.9999999f), c = vset(1e-7f);
#pragma GCC unroll 16
  for (int i = 0; i < kChains; ++i) acc[i] = vset(1.0f + i);  // distinct, or the compiler merges the chains
  for (long it = 0; it < iters; ++it)
#pragma GCC unroll 16
    for (int i = 0; i < kChains; ++i) acc[i] = vfma(acc[i], m, c);
  float s = 0;
  for (int i = 0; i < kChains; ++i) s += vfirst(acc[i]);
  return s;
}

// C[MR][NV * kLanes] += A (MR x k, packed by k) * B (k x NV * kLanes, packed by k).
template <int MR, int NV>
__attribute__((noinline)) void kernel(const float* a, const float* b, float* c, int k) {
  Vec acc[MR][NV];
#pragma GCC unroll 8
  for (int i = 0; i < MR; ++i)
#pragma GCC unroll 8
    for (int j = 0; j < NV; ++j) acc[i][j] = vzero();
  for (int p = 0; p < k; ++p, a += MR, b += NV * kLanes) {
    Vec bv[NV];
#pragma GCC unroll 8
    for (int j = 0; j < NV; ++j) {
      bv[j] = vload(b + j * kLanes);
      asm("" : "+v"(bv[j]));  // one load per vector of B, kept in a register (no folding into each FMA)
    }
#pragma GCC unroll 8
    for (int i = 0; i < MR; ++i) {
      const Vec av = vbroadcast(a + i);
#pragma GCC unroll 8
      for (int j = 0; j < NV; ++j) acc[i][j] = vfma(av, bv[j], acc[i][j]);
    }
  }
#pragma GCC unroll 8
  for (int i = 0; i < MR; ++i)
#pragma GCC unroll 8
    for (int j = 0; j < NV; ++j) vaccumulate(c + (i * NV + j) * kLanes, acc[i][j]);
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Runs body(thread index) on `threads` threads at once; returns the wall seconds.
double timed_on_threads(int threads, const std::function<void(int)>& body) {
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::thread> team;
  for (int t = 1; t < threads; ++t) team.emplace_back(body, t);
  body(0);
  for (auto& th : team) th.join();
  return seconds_since(t0);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// GFLOP/s of `flops_per_thread` on each of `threads` threads, median of 5.
double rate(int threads, double flops_per_thread, const std::function<void(int)>& body) {
  body(0);  // warm-up (page faults, frequency)
  std::vector<double> r;
  for (int rep = 0; rep < 5; ++rep) r.push_back(threads * flops_per_thread / timed_on_threads(threads, body) / 1e9);
  return median(r);
}

volatile float g_sink;  // keeps the fma loop's result alive

double fma_rate(int threads) {
  const long iters = 20'000'000;
  return rate(threads, 2.0 * kLanes * kChains * iters, [&](int) { g_sink = fma_loop(iters); });
}

template <int MR, int NV>
double kernel_rate(int threads) {
  const long calls = 30'000;
  return rate(threads, 2.0 * MR * NV * kLanes * kDepth * calls, [&](int) {
    // Each thread packs its own blocks (first touch on its own core).
    std::vector<float> store(MR * kDepth + NV * kLanes * kDepth + MR * NV * kLanes + 64, 1e-3f);
    float* base = reinterpret_cast<float*>((reinterpret_cast<uintptr_t>(store.data()) + 63) & ~uintptr_t{63});
    float *a = base, *b = a + MR * kDepth, *c = b + NV * kLanes * kDepth;
    for (long i = 0; i < calls; ++i) kernel<MR, NV>(a, b, c, kDepth);
    g_sink = c[0];
  });
}

double sgemm_rate(int n) {
  std::vector<float> a(size_t(n) * n, 0.5f), b(size_t(n) * n, 0.25f), c(size_t(n) * n);
  auto body = [&](int) { cblas_sgemm(101, 111, 112, n, n, n, 1.0f, a.data(), n, b.data(), n, 0.0f, c.data(), n); };
  const double flops = 2.0 * n * n * n;
  return rate(1, flops, body);
}

// Dependent adds per second (GHz): each waits for the one before, one per cycle.
double clock_ghz() {
  const long n = 500'000'000;
  std::vector<double> r;
  for (int rep = 0; rep < 3; ++rep) {
    long x = 0;
    const auto t0 = std::chrono::steady_clock::now();
    for (long i = 0; i < n; i += 10)
      asm volatile(
          "add $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\t"
          "add $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\tadd $1, %0"
          : "+r"(x));
    r.push_back(static_cast<double>(x) / seconds_since(t0) / 1e9);
  }
  return median(r);
}

std::string cpu_model() {
  std::ifstream f("/proc/cpuinfo");
  for (std::string line; std::getline(f, line);)
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  return "";
}

int cores() {
  cpu_set_t set;
  return sched_getaffinity(0, sizeof(set), &set) == 0 ? CPU_COUNT(&set) : 1;
}

}  // namespace

int main(int argc, char** argv) {
  const int all = argc > 1 ? std::atoi(argv[1]) : cores();
  const int n = argc > 2 ? std::atoi(argv[2]) : 2048;
  if (all < 1 || n < 1 || n > 16384) {
    std::fprintf(stderr, "usage: fp32_ceiling [threads >= 1] [sgemm N in 1..16384] (got %s %s)\n",
                 argc > 1 ? argv[1] : "-", argc > 2 ? argv[2] : "-");
    return 2;
  }
  std::printf("{\"cpu\":\"%s\",\"vector_bits\":%d,\"sgemm_n\":%d,\"clock_ghz\":%.2f", cpu_model().c_str(),
              32 * kLanes, n, clock_ghz());
  for (int threads : {1, all}) {
    const double fma = fma_rate(threads);
    const double k6 = kernel_rate<6, 2>(threads), k4 = kernel_rate<4, 3>(threads), k8 = kernel_rate<8, 1>(threads);
    std::printf(",\"threads_%d\":{\"fma_gflop_s\":%.1f,\"kernel_6x%d_gflop_s\":%.1f,\"kernel_4x%d_gflop_s\":%.1f,"
                "\"kernel_8x%d_gflop_s\":%.1f,\"best_kernel_of_fma\":%.3f}",
                threads, fma, 2 * kLanes, k6, 3 * kLanes, k4, kLanes, k8, std::max({k6, k4, k8}) / fma);
    if (threads == all) {
      const double s = sgemm_rate(n);
      std::printf(",\"sgemm_gflop_s\":%.1f,\"sgemm_of_fma\":%.3f,\"sgemm_of_best_kernel\":%.3f", s, s / fma,
                  s / std::max({k6, k4, k8}));
    }
    if (all == 1) break;
  }
  std::printf("}\n");
  return 0;
}

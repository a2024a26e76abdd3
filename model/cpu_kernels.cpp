#include "model/cpu_kernels.h"

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#define RLF_KERNELS_AVX2 1
#endif

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <vector>

#include "model/cpu_team.h"

namespace rlf::cpu {

namespace {

int g_kernel_threads = 1;            // set_kernel_threads
std::unique_ptr<ThreadTeam> g_team;  // g_kernel_threads threads; null for 1

// f(b, e) over [begin, end) in blocks of `grain` items, dealt round-robin to
// the team's threads (round-robin balances causal attention, whose jobs grow
// along the sequence). Items must be independent.
template <class F>
void parallel_for(int64_t begin, int64_t end, int64_t grain, const F& f) {
  const int64_t blocks = (end - begin + grain - 1) / grain;
  if (!g_team || blocks <= 1) {
    if (end > begin) f(begin, end);
    return;
  }
  g_team->run(blocks, [&](int64_t k) { f(begin + k * grain, std::min(end, begin + (k + 1) * grain)); });
}

// Dot product with 8 independent partial sums (lane j sums the products
// i = j mod 8 with fused multiply-adds), reduced by a fixed tree
// ((0+1)+(2+3))+((4+5)+(6+7)), then the tail. dot_rows8 below computes
// exactly the same values 8 rows at a time.
inline float dot(const float* a, const float* b, int64_t n) {
#ifdef RLF_KERNELS_AVX2
  if (n % 8 == 0) {
    __m256 acc = _mm256_setzero_ps();
    for (int64_t i = 0; i < n; i += 8) acc = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), acc);
    const __m256 t = _mm256_hadd_ps(acc, acc);
    const __m256 u = _mm256_hadd_ps(t, t);
    return _mm_cvtss_f32(_mm_add_ss(_mm256_castps256_ps128(u), _mm256_extractf128_ps(u, 1)));
  }
#endif
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int j = 0; j < 8; ++j) acc[j] += a[i + j] * b[i + j];
  float s = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
  for (; i < n; ++i) s += a[i] * b[i];
  return s;
}

// out[r] = dot(a, rows + r * stride, n) for 8 rows r, bit-identical to dot()
// (same partial sums, same tree). With AVX2 the 8 rows' horizontal sums
// share one shuffle tree instead of one tree per row.
inline void dot_rows8(const float* a, const float* rows, int64_t stride, int64_t n, float* out) {
#ifdef RLF_KERNELS_AVX2
  if (n % 8 == 0) {
    __m256 acc[8];
    for (int r = 0; r < 8; ++r) acc[r] = _mm256_setzero_ps();
    for (int64_t i = 0; i < n; i += 8) {
      const __m256 av = _mm256_loadu_ps(a + i);
      for (int r = 0; r < 8; ++r) acc[r] = _mm256_fmadd_ps(av, _mm256_loadu_ps(rows + r * stride + i), acc[r]);
    }
    // hadd pairs lanes (0+1), (2+3) per 128-bit half; twice gives
    // (0+1)+(2+3) in the low half and (4+5)+(6+7) in the high half.
    const __m256 t0 = _mm256_hadd_ps(acc[0], acc[1]), t1 = _mm256_hadd_ps(acc[2], acc[3]);
    const __m256 t2 = _mm256_hadd_ps(acc[4], acc[5]), t3 = _mm256_hadd_ps(acc[6], acc[7]);
    const __m256 u0 = _mm256_hadd_ps(t0, t1), u1 = _mm256_hadd_ps(t2, t3);
    const __m256 lo = _mm256_permute2f128_ps(u0, u1, 0x20), hi = _mm256_permute2f128_ps(u0, u1, 0x31);
    _mm256_storeu_ps(out, _mm256_add_ps(lo, hi));
    return;
  }
#endif
  for (int r = 0; r < 8; ++r) out[r] = dot(a, rows + r * stride, n);
}

// out[s] = dot(a, rows + s * stride, n) for s in [0, S).
inline void dot_rows(const float* a, const float* rows, int64_t stride, int64_t n, int64_t S, float* out) {
  int64_t s = 0;
  for (; s + 8 <= S; s += 8) dot_rows8(a, rows + s * stride, stride, n, out + s);
  for (; s < S; ++s) out[s] = dot(a, rows + s * stride, n);
}

#ifdef RLF_KERNELS_AVX2
// The tree of dot(): ((0+1)+(2+3))+((4+5)+(6+7)).
inline float hsum(__m256 v) {
  const __m256 t = _mm256_hadd_ps(v, v);
  const __m256 u = _mm256_hadd_ps(t, t);
  return _mm_cvtss_f32(_mm_add_ss(_mm256_castps256_ps128(u), _mm256_extractf128_ps(u, 1)));
}
#endif

// A weight element as fp32: a float as it is, a bf16 (its raw bits) widened
// exactly (the bits moved to the top half of a float).
inline float widen(float v) { return v; }
inline float widen(uint16_t b) {
  const uint32_t u = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &u, sizeof(f));
  return f;
}
#ifdef RLF_KERNELS_AVX2
inline __m256 load8(const float* p) { return _mm256_loadu_ps(p); }
inline __m256 load8(const uint16_t* p) {
  const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}
#if defined(__AVX512F__)
inline __m512 load16(const float* p) { return _mm512_loadu_ps(p); }
inline __m512 load16(const uint16_t* p) {
  const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}
#endif
#endif

#ifdef RLF_KERNELS_AVX2
// Step k of a pass that reads kBytes of weights per step asks for the same
// kBytes of the next block (`next`): by the pass's end the next block is in
// cache (software prefetch; the sums are untouched). Rows of a few KB are
// too short for the hardware prefetcher to get going on each block's streams.
template <int64_t kBytes>
inline void prefetch_share(const char* next, int64_t k) {
  for (int64_t b = 0; b < kBytes; b += 64) _mm_prefetch(next + k * kBytes + b, _MM_HINT_T0);
}
#endif

// y[n, o] for R weight rows o0.. and M input rows n0..: each weight vector
// loaded once feeds M fused multiply-adds. Per element: one vector of lane
// sums over i < Iv (16 lanes with AVX-512, 8 with AVX2, 8 scalar partial
// sums otherwise), reduced, then the tail in order (one fused multiply-add
// per term where the kernels are vectorised). WT is the weight's
// element (float, or uint16_t for bf16 bits, widened on load): the sums are
// the same as over the widened fp32 weight.
template <class WT, int R, int M>
inline void matmul_wt_block(const float* x, const WT* w, const float* bias, float* y, int64_t I, int64_t O,
                            int64_t n0, int64_t o0, const char* next) {
  float out[R][M];
#if defined(__AVX512F__) && defined(RLF_KERNELS_AVX2)
  const int64_t Iv = I - I % 16;
  __m512 acc[R][M];
  for (int r = 0; r < R; ++r)
    for (int m = 0; m < M; ++m) acc[r][m] = _mm512_setzero_ps();
  for (int64_t i = 0; i < Iv; i += 16) {
    if (next) prefetch_share<R * 16 * sizeof(WT)>(next, i / 16);
    __m512 xv[M];
    for (int m = 0; m < M; ++m) xv[m] = _mm512_loadu_ps(x + (n0 + m) * I + i);
    for (int r = 0; r < R; ++r) {
      const __m512 wv = load16(w + (o0 + r) * I + i);
      for (int m = 0; m < M; ++m) acc[r][m] = _mm512_fmadd_ps(wv, xv[m], acc[r][m]);
    }
  }
  for (int r = 0; r < R; ++r)
    for (int m = 0; m < M; ++m) {
      // lanes i and i + 8 first, then dot()'s tree over the 8 sums (through
      // memory: GCC 12's 512-to-256-bit casts warn of uninitialised values)
      alignas(64) float l[16];
      _mm512_store_ps(l, acc[r][m]);
      out[r][m] = hsum(_mm256_add_ps(_mm256_load_ps(l), _mm256_load_ps(l + 8)));
    }
#elif defined(RLF_KERNELS_AVX2)
  const int64_t Iv = I - I % 8;
  __m256 acc[R][M];
  for (int r = 0; r < R; ++r)
    for (int m = 0; m < M; ++m) acc[r][m] = _mm256_setzero_ps();
  for (int64_t i = 0; i < Iv; i += 8) {
    if (next) prefetch_share<R * 8 * sizeof(WT)>(next, i / 8);
    __m256 xv[M];
    for (int m = 0; m < M; ++m) xv[m] = _mm256_loadu_ps(x + (n0 + m) * I + i);
    for (int r = 0; r < R; ++r) {
      const __m256 wv = load8(w + (o0 + r) * I + i);
      for (int m = 0; m < M; ++m) acc[r][m] = _mm256_fmadd_ps(wv, xv[m], acc[r][m]);
    }
  }
  for (int r = 0; r < R; ++r)
    for (int m = 0; m < M; ++m) out[r][m] = hsum(acc[r][m]);
#else
  const int64_t Iv = I - I % 8;
  for (int r = 0; r < R; ++r)
    for (int m = 0; m < M; ++m) {
      const float* a = x + (n0 + m) * I;
      const WT* b = w + (o0 + r) * I;
      float l[8] = {0, 0, 0, 0, 0, 0, 0, 0};
      for (int64_t i = 0; i < Iv; i += 8)
        for (int j = 0; j < 8; ++j) l[j] += a[i + j] * widen(b[i + j]);
      out[r][m] = ((l[0] + l[1]) + (l[2] + l[3])) + ((l[4] + l[5]) + (l[6] + l[7]));
    }
#endif
  for (int r = 0; r < R; ++r)
    for (int m = 0; m < M; ++m) {
      const float* a = x + (n0 + m) * I;
      const WT* b = w + (o0 + r) * I;
      float s = out[r][m];
#ifdef RLF_KERNELS_AVX2
      // one fused multiply-add per term, spelled out: left to the compiler,
      // the tail fused for fp32 weights and not for widened bf16 ones
      for (int64_t i = Iv; i < I; ++i) s = std::fma(a[i], widen(b[i]), s);
#else
      for (int64_t i = Iv; i < I; ++i) s += a[i] * widen(b[i]);
#endif
      y[(n0 + m) * O + o0 + r] = bias ? s + bias[o0 + r] : s;
    }
}

// Weight rows [o0, o1) against all N input rows.
template <int R, class WT>
void matmul_wt_rows(const float* x, const WT* w, const float* bias, float* y, int64_t N, int64_t I, int64_t O,
                    int64_t o0, int64_t o1) {
  for (int64_t o = o0; o < o1; o += R) {
    // The first pass over these R rows asks for the next R (contiguous) into cache.
    const char* next = o + 2 * R <= o1 ? reinterpret_cast<const char*>(w + (o + R) * I) : nullptr;
    int64_t n = 0;
#if defined(__AVX512F__) && defined(RLF_KERNELS_AVX2)
    // 32 vector registers: R x 4 accumulators, the weight vector and 4 inputs
    for (; n + 4 <= N; n += 4) matmul_wt_block<WT, R, 4>(x, w, bias, y, I, O, n, o, n == 0 ? next : nullptr);
#endif
    for (; n + 2 <= N; n += 2) matmul_wt_block<WT, R, 2>(x, w, bias, y, I, O, n, o, n == 0 ? next : nullptr);
    if (n < N) matmul_wt_block<WT, R, 1>(x, w, bias, y, I, O, n, o, n == 0 ? next : nullptr);
  }
}

// exp(x) in fp32 to ~1 ulp (Cephes' expf: x = n ln2 + r, a degree-6
// polynomial in r, 2^n from the exponent bits), written branch-free so loops
// over it vectorise (model/CMakeLists.txt compiles this file with -fno-math-errno
// -fno-trapping-math). Inputs below -87.3 give ~1e-38 instead of 0.
inline float fast_exp(float x) {
  x = x < -87.3f ? -87.3f : x;
  x = x > 88.7f ? 88.7f : x;
  const float fl = std::floor(x * 1.44269504088896341f + 0.5f);  // n, rounded
  const int32_t n = static_cast<int32_t>(fl);
  float r = x - fl * 0.693359375f;
  r = r + fl * 2.12194440e-4f;
  float y = 1.9875691500e-4f;
  y = y * r + 1.3981999507e-3f;
  y = y * r + 8.3334519073e-3f;
  y = y * r + 4.1665795894e-2f;
  y = y * r + 1.6666665459e-1f;
  y = y * r + 5.0000001201e-1f;
  y = y * r * r + r + 1.0f;
  const int32_t bits = (n + 127) << 23;
  float scale;
  std::memcpy(&scale, &bits, sizeof(scale));
  return y * scale;
}

// o[0, hd) = sum_s w[s] * rows[s * stride + (0, hd)]: each column sums over
// s in order (one fused multiply-add per slot), kept in registers (no
// store-to-load chain through o). Columns go in passes of up to 8 vectors
// (16 lanes with AVX-512, 8 with AVX2): up to 8 independent accumulator chains
// per slot instead of one (the sums are the same whatever the pass width).
// Slots whose weight is 0 are skipped (invisible slots may hold anything).
// With `accumulate` the sums start from o's values instead of 0, so two
// calls over consecutive stretches of slots give one call's result exactly.
#ifdef RLF_KERNELS_AVX2
#if defined(__AVX512F__)
struct Lanes16 {
  using V = __m512;
  static constexpr int kWidth = 16;
  static V load(const float* p) { return _mm512_loadu_ps(p); }
  static void store(float* p, V v) { _mm512_storeu_ps(p, v); }
  static V zero() { return _mm512_setzero_ps(); }
  static V set1(float x) { return _mm512_set1_ps(x); }
  static V fma(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
  static V add(V a, V b) { return _mm512_add_ps(a, b); }
};
#endif
struct Lanes8 {
  using V = __m256;
  static constexpr int kWidth = 8;
  static V load(const float* p) { return _mm256_loadu_ps(p); }
  static void store(float* p, V v) { _mm256_storeu_ps(p, v); }
  static V zero() { return _mm256_setzero_ps(); }
  static V set1(float x) { return _mm256_set1_ps(x); }
  static V fma(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
  static V add(V a, V b) { return _mm256_add_ps(a, b); }
};

// One pass of weighted_rows over NV vectors of columns starting at o.
template <class L, int NV>
inline void weighted_rows_pass(const float* w, const float* rows, int64_t stride, int64_t S, float* o,
                               bool accumulate) {
  typename L::V acc[NV];
  for (int j = 0; j < NV; ++j) acc[j] = accumulate ? L::load(o + L::kWidth * j) : L::zero();
  for (int64_t s = 0; s < S; ++s) {
    const float ws = w[s];
    if (ws == 0.0f) continue;
    const typename L::V wv = L::set1(ws);
    const float* r = rows + s * stride;
    for (int j = 0; j < NV; ++j) acc[j] = L::fma(wv, L::load(r + L::kWidth * j), acc[j]);
  }
  for (int j = 0; j < NV; ++j) L::store(o + L::kWidth * j, acc[j]);
}

// Passes of up to 8 vectors of L over columns [i, hd); returns where they stopped.
template <class L>
inline int64_t weighted_rows_vectors(const float* w, const float* rows, int64_t stride, int64_t S, int64_t hd,
                                     float* o, bool accumulate, int64_t i) {
  while (i + L::kWidth <= hd) {
    const int64_t nv = std::min<int64_t>(8, (hd - i) / L::kWidth);
    const float* r = rows + i;
    float* oi = o + i;
    switch (nv) {
      case 1: weighted_rows_pass<L, 1>(w, r, stride, S, oi, accumulate); break;
      case 2: weighted_rows_pass<L, 2>(w, r, stride, S, oi, accumulate); break;
      case 3: weighted_rows_pass<L, 3>(w, r, stride, S, oi, accumulate); break;
      case 4: weighted_rows_pass<L, 4>(w, r, stride, S, oi, accumulate); break;
      case 5: weighted_rows_pass<L, 5>(w, r, stride, S, oi, accumulate); break;
      case 6: weighted_rows_pass<L, 6>(w, r, stride, S, oi, accumulate); break;
      case 7: weighted_rows_pass<L, 7>(w, r, stride, S, oi, accumulate); break;
      default: weighted_rows_pass<L, 8>(w, r, stride, S, oi, accumulate); break;
    }
    i += nv * L::kWidth;
  }
  return i;
}
#endif

inline void weighted_rows(const float* w, const float* rows, int64_t stride, int64_t S, int64_t hd, float* o,
                          bool accumulate = false) {
  int64_t i = 0;
#ifdef RLF_KERNELS_AVX2
#if defined(__AVX512F__)
  i = weighted_rows_vectors<Lanes16>(w, rows, stride, S, hd, o, accumulate, i);
#endif
  i = weighted_rows_vectors<Lanes8>(w, rows, stride, S, hd, o, accumulate, i);
#else
  // Portable builds: 8 columns per pass over the rows (the compiler's vectors).
  for (; i + 8 <= hd; i += 8) {
    float a[8];
    for (int j = 0; j < 8; ++j) a[j] = accumulate ? o[i + j] : 0.0f;
    for (int64_t s = 0; s < S; ++s) {
      const float ws = w[s];
      if (ws == 0.0f) continue;
      const float* r = rows + s * stride + i;
      for (int j = 0; j < 8; ++j) a[j] += ws * r[j];
    }
    for (int j = 0; j < 8; ++j) o[i + j] = a[j];
  }
#endif
  for (; i < hd; ++i) {
    float a = accumulate ? o[i] : 0.0f;
    for (int64_t s = 0; s < S; ++s)
      if (w[s] != 0.0f) a += w[s] * rows[s * stride + i];
    o[i] = a;
  }
}

// Sum with 8 partial sums (vectorisable).
inline float sum8(const float* x, int64_t n) {
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int j = 0; j < 8; ++j) acc[j] += x[i + j];
  float s = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
  for (; i < n; ++i) s += x[i];
  return s;
}

inline float sigmoid(float x) { return 1.0f / (1.0f + fast_exp(-x)); }


// True when every row's positions are 0, 1, ..., T-1 (the trainer's layout):
// then token s is visible from token t only if s <= t.
bool positions_are_indices(const int64_t* pos, int64_t B, int64_t T) {
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < T; ++t)
      if (pos[b * T + t] != t) return false;
  return true;
}

// Asks for rows [0, S) of hd floats, `stride` apart, into L2 (64-byte lines).
// (Always inlined, here and below: GCC deems a function that only
// prefetches free of effects and drops calls to it.)
[[gnu::always_inline]] inline void prefetch_rows(const float* rows, int64_t S, int64_t stride, int64_t hd) {
  for (int64_t s = 0; s < S; ++s)
    for (int64_t i = 0; i < hd; i += 16) __builtin_prefetch(rows + s * stride + i, 0, 2);
}

// Decoding reads each (row, head)'s keys and values from its own cache slots
// once, straight from memory, in bursts too short for the hardware
// prefetcher: asks for the keys and values of this thread's next two jobs
// (parallel_for deals jobs round-robin) into L2 while this one runs.
// bench/decode_attention.cpp (stories110M, batch 64, 48 cached positions, 12
// layers, Zen 4, 2026-11-27): 15.1 -> 10.7 ms per step (medians of 3 runs;
// 15 -> 21 GB/s of cache read). When the cache sits in L2 the prefetches
// cost ~1 ms (2.2 -> 3.4 ms).
[[gnu::always_inline]] inline void prefetch_next_jobs(int64_t job, const KeyLayout& kv, const int64_t* pos,
                                                     const AttentionShape& sh) {
  const int64_t H = sh.H, G = sh.H / sh.K, jobs = sh.B * sh.T * sh.H;
  for (int64_t ahead = 1; ahead <= 2; ++ahead) {
    const int64_t next = job + ahead * g_kernel_threads;
    if (next >= jobs) return;
    const int64_t n = next / H, b = n / sh.T, kh = (next % H) / G;
    const int64_t own = pos[n] + 1 - (kv.prefix ? std::min(kv.prefix[b].len, pos[n] + 1) : 0);
    const float* k = kv.keys + b * kv.s0 + kh * kv.s1;
    const float* v = kv.values + b * kv.s0 + kh * kv.s1;
    prefetch_rows(k, own, kv.s2, sh.hd);
    prefetch_rows(v, own, kv.s2, sh.hd);
  }
}

// tanh(x) = 1 - 2 / (e^2x + 1) through fast_exp: absolute error ~1e-7
// (what GELU's and soft-capping's products need), and vectorisable.
inline float fast_tanh(float x) { return 1.0f - 2.0f / (fast_exp(2.0f * x) + 1.0f); }

// A score after the scale and, when on, the soft-cap c·tanh(s / c).
inline float scaled_score(float dot, const AttentionShape& sh) {
  const float s = dot * sh.scale;
  return sh.softcap > 0 ? sh.softcap * fast_tanh(s / sh.softcap) : s;
}

// Attention for queries job in [begin, end) (job = n * H + head). A sliding
// window starts the query's slots at lo (cached and in-order: slot =
// position), so keys before it are neither read nor summed.
void attention_jobs(int64_t begin, int64_t end, const float* q, const KeyLayout& kv, const int64_t* pos,
                    const uint8_t* valid, bool cached, bool ordered, const AttentionShape& sh, float* out,
                    float* probs, std::vector<float>& w) {
  const int64_t T = sh.T, H = sh.H, hd = sh.hd, G = sh.H / sh.K, W = sh.window;
  for (int64_t job = begin; job < end; ++job) {
    const int64_t n = job / H, head = job % H, b = n / T, t = n % T, kh = head / G, p = pos[n];
    float* o = out + (n * H + head) * hd;
    float* pr = probs ? probs + ((b * H + head) * T + t) * T : nullptr;
    if (sh.drop_invalid_queries && !cached && valid && !valid[n]) {  // dropped by the caller: not computed
      std::fill(o, o + hd, 0.0f);
      if (pr) std::fill(pr, pr + T, 0.0f);
      continue;
    }
    const float* qv = q + (n * H + head) * hd;
    const float* kb = kv.keys + b * kv.s0 + kh * kv.s1;
    const float* vb = kv.values + b * kv.s0 + kh * kv.s1;
    const int64_t S = cached ? p + 1 : (ordered ? t + 1 : T);
    const int64_t lo = W > 0 && (cached || ordered) ? std::max<int64_t>(0, S - W) : 0;
    // Positions [0, P) from the row's shared prefix, [P, S) from its own slots 0...
    const SharedPrefix* pre = cached && kv.prefix && kv.prefix[b].len > 0 ? &kv.prefix[b] : nullptr;
    const int64_t P = pre ? std::min(pre->len, S) : 0;
    const int64_t own0 = std::max(lo, P);  // first slot read from the row's own slots
    w.resize(static_cast<size_t>(S));
    if (cached) prefetch_next_jobs(job, kv, pos, sh);
    if (P > lo) dot_rows(qv, pre->keys + kh * pre->s1 + lo * pre->s2, pre->s2, hd, P - lo, w.data() + lo);
    dot_rows(qv, kb + (own0 - P) * kv.s2, kv.s2, hd, S - own0, w.data() + own0);
    float mx = -INFINITY;
    for (int64_t s = lo; s < S; ++s) {
      if (!cached && ((!ordered && (pos[b * T + s] > p || (W > 0 && p - pos[b * T + s] >= W))) ||
                      (valid && !valid[b * T + s]))) {
        w[s] = -INFINITY;
        continue;
      }
      w[s] = scaled_score(w[s], sh);
      mx = std::max(mx, w[s]);
    }
    if (pr) std::fill(pr, pr + lo, 0.0f), std::fill(pr + S, pr + T, 0.0f);
    if (mx == -INFINITY) {  // nothing visible (padding past a window): 0, as the module path
      std::fill(o, o + hd, 0.0f);
      if (pr) std::fill(pr + lo, pr + S, 0.0f);
      continue;
    }
    float* wp = w.data();
    for (int64_t s = lo; s < S; ++s) {
      const float ws = wp[s], e = fast_exp(ws - mx);
      wp[s] = ws > -INFINITY ? e : 0.0f;  // masked slots exactly 0
    }
    const float inv = 1.0f / sum8(wp + lo, S - lo);
    for (int64_t s = lo; s < S; ++s) wp[s] *= inv;
    if (P > lo) weighted_rows(wp + lo, pre->values + kh * pre->s1 + lo * pre->s2, pre->s2, P - lo, hd, o);
    weighted_rows(wp + own0, vb + (own0 - P) * kv.s2, kv.s2, S - own0, hd, o, /*accumulate=*/P > lo);
    if (pr) std::copy(wp + lo, wp + S, pr + lo);
  }
}

// Backward for (row, kv head) tasks job in [begin, end) (job = b * K + kh).
// Per query head: dS row by row (dq from it at once), stored transposed with
// P, then dk and dv column by column as weighted sums over the queries that
// see each key (register accumulators, as the forward's output).
void attention_backward_jobs(int64_t begin, int64_t end, const float* q, const float* k, const float* v,
                             const float* probs, const float* dout, const AttentionShape& sh, bool ordered,
                             const uint8_t* valid, float* dq, float* dk, float* dv, std::vector<float>& dp,
                             std::vector<float>& ds_t, std::vector<float>& p_t, std::vector<float>& raw) {
  const int64_t T = sh.T, H = sh.H, K = sh.K, hd = sh.hd, G = H / K;
  for (int64_t job = begin; job < end; ++job) {
    const int64_t b = job / K, kh = job % K;
    // Queries [0, T_end): dropped queries past the row's last valid token are
    // skipped (their dout is 0: nothing they would add to dk, dv or dq).
    int64_t T_end = T;
    if (sh.drop_invalid_queries && valid)
      while (T_end > 0 && !valid[b * T + T_end - 1]) --T_end;
    for (int64_t g = 0; g < G; ++g) {
      const int64_t head = kh * G + g;
      for (int64_t t = 0; t < T_end; ++t) {
        const int64_t n = b * T + t, S = ordered ? t + 1 : T;
        const float* pr = probs + ((b * H + head) * T + t) * T;
        const float* dov = dout + (n * H + head) * hd;
        // dP_s = dO . V_s ; dS_s = P_s (dP_s - sum_j P_j dP_j)
        float d = 0.0f;
        dot_rows(dov, v + (b * T * K + kh) * hd, K * hd, hd, S, dp.data());
        for (int64_t s = 0; s < S; ++s) {
          if (pr[s] == 0.0f) dp[s] = 0.0f;
          d += pr[s] * dp[s];
        }
        for (int64_t s = 0; s < S; ++s) dp[s] = pr[s] * (dp[s] - d) * sh.scale;
        if (sh.softcap > 0) {
          // Through the soft-cap: d(c·tanh(x / c))/dx = 1 - tanh(x / c)^2, x the scaled dot product.
          dot_rows(q + (n * H + head) * hd, k + (b * T * K + kh) * hd, K * hd, hd, S, raw.data());
          for (int64_t s = 0; s < S; ++s) {
            if (pr[s] == 0.0f) continue;
            const float th = fast_tanh(raw[s] * sh.scale / sh.softcap);
            dp[s] *= 1.0f - th * th;
          }
        }
        weighted_rows(dp.data(), k + (b * T * K + kh) * hd, K * hd, S, hd, dq + (n * H + head) * hd);
        for (int64_t s = 0; s < S; ++s) {
          ds_t[s * T + t] = dp[s];
          p_t[s * T + t] = pr[s];
        }
      }
      // dk_s += sum_t dS_ts q_t ; dv_s += sum_t P_ts dO_t over the queries t that see s
      for (int64_t s = 0; s < T; ++s) {
        const int64_t t0 = ordered ? s : 0, m = (b * T + s) * K + kh;
        if (t0 >= T_end) break;
        const int64_t first = (b * T + t0) * H + head;
        weighted_rows(ds_t.data() + s * T + t0, q + first * hd, H * hd, T_end - t0, hd, dk + m * hd, true);
        weighted_rows(p_t.data() + s * T + t0, dout + first * hd, H * hd, T_end - t0, hd, dv + m * hd, true);
      }
    }
  }
}

// tanh-approximated GELU (PyTorch's gelu(x, approximate="tanh")):
// gelu(x) = x/2 · (1 + tanh(β (x + κ x³))), β = sqrt(2/π), κ = 0.044715.
constexpr float kGeluBeta = 0.7978845608028654f, kGeluKappa = 0.044715f;

void gelu_glu_forward_range(const float* g, const float* u, float* a, int64_t b, int64_t e) {
  for (int64_t i = b; i < e; ++i) {
    const float x = g[i], th = fast_tanh(kGeluBeta * (x + kGeluKappa * x * x * x));
    a[i] = 0.5f * x * (1.0f + th) * u[i];
  }
}

void gelu_glu_backward_range(const float* g, const float* u, const float* da, float* dg, float* du, int64_t b,
                             int64_t e) {
  for (int64_t i = b; i < e; ++i) {
    const float x = g[i], th = fast_tanh(kGeluBeta * (x + kGeluKappa * x * x * x));
    const float gelu = 0.5f * x * (1.0f + th);
    const float dgelu = 0.5f * (1.0f + th) + 0.5f * x * (1.0f - th * th) * kGeluBeta * (1.0f + 3.0f * kGeluKappa * x * x);
    dg[i] = da[i] * u[i] * dgelu;
    du[i] = da[i] * gelu;
  }
}

void swiglu_forward_range(const float* g, const float* u, float* a, int64_t b, int64_t e) {
  for (int64_t i = b; i < e; ++i) {
    const float gi = g[i], ex = fast_exp(-gi);
    a[i] = gi * u[i] / (1.0f + ex);
  }
}

void swiglu_backward_range(const float* g, const float* u, const float* da, float* dg, float* du, int64_t b,
                           int64_t e) {
  for (int64_t i = b; i < e; ++i) {
    const float gi = g[i], ex = fast_exp(-gi);
    const float s = 1.0f / (1.0f + ex);
    dg[i] = da[i] * u[i] * s * (1.0f + gi * (1.0f - s));
    du[i] = da[i] * gi * s;
  }
}

// Blocks of the normalisers below: exponentials of a block are summed in 8
// lanes, blocks are added in double.
constexpr int64_t kExpBlock = 1024;

float row_max(const float* x, int64_t V) {
  float m = -INFINITY;
  for (int64_t i = 0; i < V; ++i) m = std::max(m, x[i]);
  return m;
}

// e[i] = exp(scale * x[i] - shift) for i < n (n <= kExpBlock); returns their sum.
double exp_block_sum(const float* x, float scale, float shift, int64_t n, float* e) {
  for (int64_t i = 0; i < n; ++i) e[i] = fast_exp(scale * x[i] - shift);
  return sum8(e, n);
}

}  // namespace

void set_kernel_threads(int threads) {
  threads = std::max(1, threads);
  if (threads == g_kernel_threads) return;
  g_team.reset();
  if (threads > 1) g_team = std::make_unique<ThreadTeam>(threads);
  g_kernel_threads = threads;
}
int kernel_threads() { return g_kernel_threads; }

void parallel_rows(int64_t n, const std::function<void(int64_t, int64_t)>& f) { parallel_for(0, n, 1, f); }

namespace {

template <class WT>
void matmul_wt_any(const float* x, const WT* w, const float* bias, float* y, int64_t N, int64_t I, int64_t O) {
  // One contiguous share of the weight rows per thread: each streams its part
  // of the matrix front to back (the hardware prefetcher's best case).
  const int64_t O4 = O - O % 4, quads = O4 / 4;
  const int64_t share = std::max<int64_t>(16, (quads + g_kernel_threads - 1) / g_kernel_threads);
  parallel_for(0, quads, share, [&](int64_t b, int64_t e) { matmul_wt_rows<4>(x, w, bias, y, N, I, O, b * 4, e * 4); });
  matmul_wt_rows<1>(x, w, bias, y, N, I, O, O4, O);
}

}  // namespace

void matmul_wt(const float* x, const float* w, const float* bias, float* y, int64_t N, int64_t I, int64_t O) {
  matmul_wt_any(x, w, bias, y, N, I, O);
}

void matmul_wt_bf16(const float* x, const uint16_t* w, const float* bias, float* y, int64_t N, int64_t I,
                    int64_t O) {
  matmul_wt_any(x, w, bias, y, N, I, O);
}

namespace {

// Each multiply and add rounded on its own, as torch.optim.AdamW's tensor
// ops do (no contraction into fused multiply-adds): the update then stays
// within an ulp or so of torch's, as the optimiser's tests demand.
template <bool kBf16Grad, bool kBf16Out>
__attribute__((optimize("fp-contract=off"))) void adamw_range(const float* g32, const uint16_t* g16, float* w, float* m, float* v, uint16_t* out16, int64_t b,
                 int64_t e, const AdamWScalars& k) {
  for (int64_t i = b; i < e; ++i) {
    float gi;
    if constexpr (kBf16Grad) {
      const uint32_t bits = static_cast<uint32_t>(g16[i]) << 16;
      std::memcpy(&gi, &bits, sizeof gi);
    } else {
      gi = g32[i];
    }
    gi *= k.clip;
    float wi = w[i] * k.decay;
    const float mi = m[i] * k.b1 + gi * k.one_minus_b1;
    const float vi = v[i] * k.b2 + gi * gi * k.one_minus_b2;
    const float denom = std::sqrt(vi) / k.sqrt_bc2 + k.eps;
    wi = wi - k.step_size * (mi / denom);
    m[i] = mi;
    v[i] = vi;
    w[i] = wi;
    if constexpr (kBf16Out) {
      uint32_t u;
      std::memcpy(&u, &wi, sizeof u);
      // round to nearest even; NaN stays a quiet NaN (c10::BFloat16's rule)
      out16[i] = std::isnan(wi) ? uint16_t{0x7FC0} : static_cast<uint16_t>((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
    }
  }
}

}  // namespace

void adamw_step(const float* g32, const uint16_t* g16, float* w, float* m, float* v, uint16_t* out16, int64_t n,
                const AdamWScalars& k) {
  constexpr int64_t kGrain = 1 << 15;  // elements per task
  const int64_t n_tasks = (n + kGrain - 1) / kGrain;
  parallel_rows(n_tasks, [&](int64_t t0, int64_t t1) {
    const int64_t b = t0 * kGrain, e = std::min(n, t1 * kGrain);
    if (g16 && out16) adamw_range<true, true>(g32, g16, w, m, v, out16, b, e, k);
    else if (g16) adamw_range<true, false>(g32, g16, w, m, v, out16, b, e, k);
    else if (out16) adamw_range<false, true>(g32, g16, w, m, v, out16, b, e, k);
    else adamw_range<false, false>(g32, g16, w, m, v, out16, b, e, k);
  });
}

bool vector_kernels() {
#ifdef RLF_KERNELS_AVX2
  return true;
#else
  return false;
#endif
}

int64_t panel_floats(int64_t O, int64_t I) { return (O + kPanelWidth - 1) / kPanelWidth * I * kPanelWidth; }

void pack_panels(const float* w, int64_t O, int64_t I, float* out) {
  constexpr int64_t P = kPanelWidth;
  const int64_t panels = (O + P - 1) / P;
  parallel_for(0, panels, 1, [&](int64_t b, int64_t e) {
    for (int64_t p = b; p < e; ++p) {
      float* dst = out + p * I * P;
      const int64_t cols = std::min(P, O - p * P);
      // 32 weight rows at a time, written as [I][32]
      for (int64_t i0 = 0; i0 < I; i0 += 64) {
        const int64_t i1 = std::min(I, i0 + 64);
        for (int64_t j = 0; j < P; ++j) {
          const float* src = w + (p * P + j) * I;
          for (int64_t i = i0; i < i1; ++i) dst[i * P + j] = j < cols ? src[i] : 0.0f;
        }
      }
    }
  });
}

namespace {

// Cache lines of the next panel a pass over this one asks for (into L2)
// while it runs: `lines` lines from `next`, one every `every` steps of i.
// The first pass over a panel otherwise waits on memory for every line
// (decoding's weights are read once per step, from DRAM). Arithmetic and
// order are untouched.
struct PanelPrefetch {
  const char* next = nullptr;
  int64_t lines = 0, every = 1, burst = 1;  // `burst` lines at a time
};

// `lines` lines over a pass of I steps: one burst every `every` steps.
inline PanelPrefetch spread(const char* next, int64_t lines, int64_t I) {
  const int64_t every = std::max<int64_t>(1, I / std::max<int64_t>(1, lines));
  const int64_t issues = std::max<int64_t>(1, I / every);
  return {next, next ? lines : 0, every, (lines + issues - 1) / issues};
}

#ifdef RLF_KERNELS_AVX2
// a0[m] / a1[m] = sum over i in order of x[m, i] * the panel's columns
// [0, W) / [W, 2W) from p (W = L's lanes; p advances a panel row per i).
template <class L, int M>
inline void panel_columns(const float* xr, const float* p, int64_t I, typename L::V (&a0)[M],
                          typename L::V (&a1)[M], const PanelPrefetch& pf) {
  for (int m = 0; m < M; ++m) a0[m] = a1[m] = L::zero();
  const char* q = pf.next;
  const char* const q_end = pf.next + pf.lines * 64;
  int64_t c = 0;
  for (int64_t i = 0; i < I; ++i) {
    if (q < q_end && ++c == pf.every) {
      for (int64_t j = 0; j < pf.burst && q < q_end; ++j, q += 64) _mm_prefetch(q, _MM_HINT_T1);
      c = 0;
    }
    const typename L::V w0 = L::load(p + i * kPanelWidth), w1 = L::load(p + i * kPanelWidth + L::kWidth);
    for (int m = 0; m < M; ++m) {
      const typename L::V xv = L::set1(xr[m * I + i]);
      a0[m] = L::fma(xv, w0, a0[m]);
      a1[m] = L::fma(xv, w1, a1[m]);
    }
  }
}
#endif

#ifdef RLF_KERNELS_AVX2
// Rows [n0, n0 + M) of y, columns [o, o + 2W) (W = L's lanes, all real):
// the accumulators plus bias[o...] when there is one.
template <class L, int M>
inline void store_columns(const typename L::V (&a0)[M], const typename L::V (&a1)[M], const float* bias, float* y,
                          int64_t O, int64_t n0, int64_t o) {
  const typename L::V b0 = bias ? L::load(bias + o) : L::zero(), b1 = bias ? L::load(bias + o + L::kWidth) : L::zero();
  for (int m = 0; m < M; ++m) {
    float* yr = y + (n0 + m) * O + o;
    L::store(yr, bias ? L::add(a0[m], b0) : a0[m]);
    L::store(yr + L::kWidth, bias ? L::add(a1[m], b1) : a1[m]);
  }
}
#endif

// y rows [n0, n0 + M) x panel p's 32 columns (cols of them real).
template <int M>
inline void panel_block(const float* x, const float* pw, const float* bias, float* y, int64_t I, int64_t O,
                        int64_t n0, int64_t o0, int64_t cols, const PanelPrefetch& pf) {
  constexpr int64_t P = kPanelWidth;
  const float* xr = x + n0 * I;
  alignas(64) float out[M][P];
#if defined(__AVX512F__) && defined(RLF_KERNELS_AVX2)
  __m512 a0[M], a1[M];
  panel_columns<Lanes16, M>(xr, pw, I, a0, a1, pf);
  if (cols == P) return store_columns<Lanes16, M>(a0, a1, bias, y, O, n0, o0);  // a whole panel: straight to y
  for (int m = 0; m < M; ++m) _mm512_store_ps(out[m], a0[m]), _mm512_store_ps(out[m] + 16, a1[m]);
#elif defined(RLF_KERNELS_AVX2)
  // 16 ymm registers: the panel in two halves of 2 vectors, M rows each
  for (int h = 0; h < 2; ++h) {
    __m256 a0[M], a1[M];
    // Each half asks for half of the block's lines.
    const int64_t first = (pf.lines + 1) / 2, n = h == 0 ? first : pf.lines - first;
    const PanelPrefetch half = spread(pf.next ? pf.next + (h == 0 ? 0 : first * 64) : nullptr, n, I);
    panel_columns<Lanes8, M>(xr, pw + h * 16, I, a0, a1, half);
    if (cols == P) {  // a whole panel: straight to y (the same sums and bias add as below)
      store_columns<Lanes8, M>(a0, a1, bias, y, O, n0, o0 + h * 16);
      continue;
    }
    for (int m = 0; m < M; ++m) _mm256_store_ps(out[m] + h * 16, a0[m]), _mm256_store_ps(out[m] + h * 16 + 8, a1[m]);
  }
  if (cols == P) return;
#else
  (void)pf;
  for (int m = 0; m < M; ++m)
    for (int64_t j = 0; j < P; ++j) out[m][j] = 0.0f;
  for (int64_t i = 0; i < I; ++i)
    for (int m = 0; m < M; ++m) {
      const float xv = xr[m * I + i];
      for (int64_t j = 0; j < P; ++j) out[m][j] += xv * pw[i * P + j];
    }
#endif
  for (int m = 0; m < M; ++m) {
    float* yr = y + (n0 + m) * O + o0;
    if (bias)
      for (int64_t j = 0; j < cols; ++j) yr[j] = out[m][j] + bias[o0 + j];
    else
      std::memcpy(yr, out[m], static_cast<size_t>(cols) * sizeof(float));
  }
}

}  // namespace

void matmul_panels(const float* x, const float* panels, const float* bias, float* y, int64_t N, int64_t I,
                   int64_t O) {
  constexpr int64_t P = kPanelWidth;
  // Rows per block: 8 with AVX-512 (16 accumulators), 6 with AVX2 (12 per half).
#if defined(__AVX512F__) && defined(RLF_KERNELS_AVX2)
  constexpr int MB = 8;
#else
  constexpr int MB = 6;
#endif
  const int64_t n_panels = (O + P - 1) / P;
  // One contiguous share of the panels per thread (each streams its part of
  // the packed weight front to back).
  const int64_t share = (n_panels + g_kernel_threads - 1) / g_kernel_threads;
  // Row blocks per panel; at up to kPanelPrefetchMaxRows rows the next panel
  // of a thread's share is asked for over them, a slice each (PanelPrefetch).
  const bool ask = N <= kPanelPrefetchMaxRows;
  const int64_t blocks = N / MB + (N % MB) / 2 + (N % MB) % 2;
  const int64_t panel_lines = I * P * static_cast<int64_t>(sizeof(float)) / 64;
  const int64_t slice = (panel_lines + blocks - 1) / std::max<int64_t>(1, blocks);
  parallel_for(0, n_panels, std::max<int64_t>(1, share), [&](int64_t b, int64_t e) {
    for (int64_t p = b; p < e; ++p) {
      const float* pw = panels + p * I * P;
      const int64_t o0 = p * P, cols = std::min(P, O - o0);
      const char* next = ask && p + 1 < e ? reinterpret_cast<const char*>(pw + I * P) : nullptr;
      int64_t k = 0;  // the row block's index
      auto prefetch = [&]() {
        const int64_t from = std::min(panel_lines, k * slice), n = next ? std::min(slice, panel_lines - from) : 0;
        ++k;
        return spread(next ? next + from * 64 : nullptr, n, I);
      };
      int64_t n = 0;
      for (; n + MB <= N; n += MB) panel_block<MB>(x, pw, bias, y, I, O, n, o0, cols, prefetch());
      for (; n + 2 <= N; n += 2) panel_block<2>(x, pw, bias, y, I, O, n, o0, cols, prefetch());
      if (n < N) panel_block<1>(x, pw, bias, y, I, O, n, o0, cols, prefetch());
    }
  });
}

void softmax_rows(const float* logits, const float* inv_t, int64_t N, int64_t V, float* lse, float* probs) {
  parallel_for(0, N, 1, [&](int64_t b, int64_t e) {
    for (int64_t n = b; n < e; ++n) {
      const float* x = logits + n * V;
      float* p = probs + n * V;
      const float m = row_max(x, V);
      if (!std::isfinite(m)) {  // NaN or Inf logits: the caller reports them
        lse[n] = NAN;
        std::fill(p, p + V, NAN);
        continue;
      }
      // temperature 1 first (the log-probs' normaliser); p holds exp(x - m)
      double z = 0;
      for (int64_t i = 0; i < V; i += kExpBlock) z += exp_block_sum(x + i, 1.0f, m, std::min(kExpBlock, V - i), p + i);
      lse[n] = m + static_cast<float>(std::log(z));
      double zt = z;
      if (inv_t[n] != 1.0f) {
        zt = 0;
        for (int64_t i = 0; i < V; i += kExpBlock)
          zt += exp_block_sum(x + i, inv_t[n], m * inv_t[n], std::min(kExpBlock, V - i), p + i);
      }
      const float inv = static_cast<float>(1.0 / zt);
      for (int64_t i = 0; i < V; ++i) p[i] *= inv;
    }
  });
}

void logsumexp_rows(const float* logits, int64_t N, int64_t V, float* lse, float* entropy) {
  parallel_for(0, N, 1, [&](int64_t b, int64_t e) {
    float ex[kExpBlock], ey[kExpBlock];
    for (int64_t n = b; n < e; ++n) {
      const float* x = logits + n * V;
      const float m = row_max(x, V);
      if (!std::isfinite(m)) {
        lse[n] = NAN;
        if (entropy) entropy[n] = NAN;
        continue;
      }
      double z = 0, zx = 0;  // sum e_i and sum e_i (x_i - m), e_i = exp(x_i - m)
      for (int64_t i = 0; i < V; i += kExpBlock) {
        const int64_t len = std::min(kExpBlock, V - i);
        z += exp_block_sum(x + i, 1.0f, m, len, ex);
        if (!entropy) continue;
        for (int64_t j = 0; j < len; ++j) ey[j] = ex[j] * (x[i + j] - m);
        zx += sum8(ey, len);
      }
      const double log_z = std::log(z);
      lse[n] = m + static_cast<float>(log_z);
      // H = -sum p log p = log Z - sum p (x - m), p = e / Z
      if (entropy) entropy[n] = static_cast<float>(log_z - zx / z);
    }
  });
}

void logprob_backward_rows(const float* logits, const float* lse, const int64_t* targets, const float* g, int64_t N,
                           int64_t V, float* dx) {
  parallel_for(0, N, 1, [&](int64_t b, int64_t e) {
    for (int64_t n = b; n < e; ++n) {
      const float* x = logits + n * V;
      float* d = dx + n * V;
      const float gn = g[n], l = lse[n];
      for (int64_t i = 0; i < V; ++i) d[i] = -gn * fast_exp(x[i] - l);
      d[targets[n]] += gn;
    }
  });
}

void gathered_dots(const float* x, const float* w, const int64_t* ids, int64_t N, int64_t M, int64_t D, float* out) {
  parallel_for(0, N, 16, [&](int64_t b, int64_t e) {
    for (int64_t n = b; n < e; ++n)
      for (int64_t j = 0; j < M; ++j) out[n * M + j] = dot(x + n * D, w + ids[n * M + j] * D, D);
  });
}

void gathered_dots_backward_input(const float* g, const float* w, const int64_t* ids, int64_t N, int64_t M, int64_t D,
                                  float* dx) {
  parallel_for(0, N, 16, [&](int64_t b, int64_t e) {
    for (int64_t n = b; n < e; ++n) {
      float* d = dx + n * D;
      std::fill(d, d + D, 0.0f);
      for (int64_t j = 0; j < M; ++j) {
        const float gj = g[n * M + j];
        if (gj == 0.0f) continue;
        const float* wr = w + ids[n * M + j] * D;
        for (int64_t i = 0; i < D; ++i) d[i] += gj * wr[i];
      }
    }
  });
}

void gathered_dots_backward_weight(const float* g, const float* x, const int64_t* ids, int64_t N, int64_t M, int64_t D,
                                   int64_t V, float* dw) {
  // Blocks of the vocabulary: each thread scans every (n, j) and adds only
  // into its own rows, in (n, j) order.
  const int64_t block = std::max<int64_t>(1, (V + 4 * kernel_threads() - 1) / (4 * kernel_threads()));
  parallel_for(0, V, block, [&](int64_t v0, int64_t v1) {
    for (int64_t n = 0; n < N; ++n)
      for (int64_t j = 0; j < M; ++j) {
        const int64_t id = ids[n * M + j];
        const float gj = g[n * M + j];
        if (id < v0 || id >= v1 || gj == 0.0f) continue;
        float* d = dw + id * D;
        const float* xr = x + n * D;
        for (int64_t i = 0; i < D; ++i) d[i] += gj * xr[i];
      }
  });
}

void add_inplace(float* y, const float* x, int64_t n) {
  parallel_for(0, n, 8192, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) y[i] += x[i];
  });
}

void rms_norm_forward(const float* x, const float* w, float* y, float* r, int64_t N, int64_t D, float eps) {
  parallel_for(0, N, 16, [&](int64_t b, int64_t e) {
    for (int64_t n = b; n < e; ++n) {
      const float* xr = x + n * D;
      float* yr = y + n * D;
      const float rn = 1.0f / std::sqrt(dot(xr, xr, D) / static_cast<float>(D) + eps);
      if (r) r[n] = rn;
      for (int64_t i = 0; i < D; ++i) yr[i] = w[i] * (xr[i] * rn);
    }
  });
}

void rms_norm_backward(const float* x, const float* w, const float* r, const float* dy, float* dx, float* dw,
                       int64_t N, int64_t D) {
  // y_i = w_i x_i r, r = (mean(x^2) + eps)^-1/2, dr/dx_j = -r^3 x_j / D:
  //   dx_j = r w_j dy_j - x_j r^3 / D * sum_i w_i dy_i x_i;   dw_i += dy_i x_i r.
  parallel_for(0, N, 16, [&](int64_t b, int64_t e) {
    for (int64_t n = b; n < e; ++n) {
      const float* xr = x + n * D;
      const float* dyr = dy + n * D;
      float* dxr = dx + n * D;
      const float rn = r[n];
      float s = 0.0f;
      for (int64_t i = 0; i < D; ++i) s += w[i] * dyr[i] * xr[i];
      const float c = s * rn * rn * rn / static_cast<float>(D);
      for (int64_t i = 0; i < D; ++i) dxr[i] = rn * w[i] * dyr[i] - xr[i] * c;
    }
  });
  for (int64_t n = 0; n < N; ++n) {  // serial: dw is shared by all rows
    const float* xr = x + n * D;
    const float* dyr = dy + n * D;
    const float rn = r[n];
    for (int64_t i = 0; i < D; ++i) dw[i] += dyr[i] * xr[i] * rn;
  }
}

void rope_inplace(float* x, const int64_t* pos, const float* cos_table, const float* sin_table, int64_t N,
                  int64_t heads, int64_t hd, int64_t rd, bool inverse) {
  // Forward: y1 = x1 c1 - x2 s1, y2 = x2 c2 + x1 s2 (halves of the first rd dimensions).
  // Transpose: x1 = y1 c1 + y2 s2, x2 = y2 c2 - y1 s1.
  const int64_t half = rd / 2;
  // Blocks of ~8K rotated floats: a decoding step's 64 rows are several.
  parallel_for(0, N, std::max<int64_t>(1, 8192 / std::max<int64_t>(1, heads * rd)), [&](int64_t b, int64_t e) {
    for (int64_t n = b; n < e; ++n) {
      const float* c = cos_table + pos[n] * rd;
      const float* s = sin_table + pos[n] * rd;
      for (int64_t h = 0; h < heads; ++h) {
        float* v = x + (n * heads + h) * hd;
        for (int64_t i = 0; i < half; ++i) {
          const float a = v[i], b2 = v[i + half];
          if (!inverse) {
            v[i] = a * c[i] - b2 * s[i];
            v[i + half] = b2 * c[i + half] + a * s[i + half];
          } else {
            v[i] = a * c[i] + b2 * s[i + half];
            v[i + half] = b2 * c[i + half] - a * s[i];
          }
        }
      }
    }
  });
}

void attention_forward(const float* q, const KeyLayout& kv, const int64_t* pos, const uint8_t* valid, bool cached,
                       const AttentionShape& sh, float* out, float* probs) {
  const bool ordered = !cached && positions_are_indices(pos, sh.B, sh.T);
  parallel_for(0, sh.B * sh.T * sh.H, 1, [&](int64_t begin, int64_t end) {
    thread_local std::vector<float> w;
    attention_jobs(begin, end, q, kv, pos, valid, cached, ordered, sh, out, probs, w);
  });
}

void attention_backward(const float* q, const float* k, const float* v, const float* probs, const float* dout,
                        const AttentionShape& sh, const int64_t* pos, const uint8_t* valid, float* dq, float* dk,
                        float* dv) {
  const int64_t B = sh.B, T = sh.T, H = sh.H, K = sh.K, hd = sh.hd;
  std::fill(dq, dq + B * T * H * hd, 0.0f);
  std::fill(dk, dk + B * T * K * hd, 0.0f);
  std::fill(dv, dv + B * T * K * hd, 0.0f);
  const bool ordered = positions_are_indices(pos, B, T);
  // One task per (row, kv head): it owns that head's dk/dv and its G query heads' dq.
  parallel_for(0, B * K, 1, [&](int64_t begin, int64_t end) {
    thread_local std::vector<float> dp, ds_t, p_t, raw;
    dp.resize(static_cast<size_t>(T));
    ds_t.resize(static_cast<size_t>(T * T));
    p_t.resize(static_cast<size_t>(T * T));
    if (sh.softcap > 0) raw.resize(static_cast<size_t>(T));
    attention_backward_jobs(begin, end, q, k, v, probs, dout, sh, ordered, valid, dq, dk, dv, dp, ds_t, p_t, raw);
  });
}

void glu_forward(GluActivation act, const float* g, const float* u, float* a, int64_t n) {
  if (act == GluActivation::Silu) return swiglu_forward(g, u, a, n);
  parallel_for(0, n, 1 << 14, [&](int64_t b, int64_t e) { gelu_glu_forward_range(g, u, a, b, e); });
}

void glu_backward(GluActivation act, const float* g, const float* u, const float* da, float* dg, float* du, int64_t n) {
  if (act == GluActivation::Silu) return swiglu_backward(g, u, da, dg, du, n);
  parallel_for(0, n, 1 << 14, [&](int64_t b, int64_t e) { gelu_glu_backward_range(g, u, da, dg, du, b, e); });
}

void swiglu_forward(const float* g, const float* u, float* a, int64_t n) {
  parallel_for(0, n, 1 << 14, [&](int64_t b, int64_t e) { swiglu_forward_range(g, u, a, b, e); });
}

void swiglu_backward(const float* g, const float* u, const float* da, float* dg, float* du, int64_t n) {
  // a = g s(g) u:  da/dg = u s (1 + g (1 - s)),  da/du = g s.
  parallel_for(0, n, 1 << 14, [&](int64_t b, int64_t e) { swiglu_backward_range(g, u, da, dg, du, b, e); });
}

}  // namespace rlf::cpu

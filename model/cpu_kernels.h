// fp32 CPU kernels on contiguous row-major buffers: RMSNorm, RoPE,
// attention (sliding windows, soft-capped scores) and the gated MLP
// activations (SwiGLU, tanh-GELU), forward and backward; decoding's matrix products
// (matmul_wt) and the sampler's normalisers (softmax_rows).
// model/cpu_fast_forward.cpp composes them with LibTorch matmuls into the
// inference path and, wrapped as autograd functions, into the fp32 CPU
// training path (see transformer.h, set_fast_cpu_path); rollout/batch_sampler.cpp
// samples with softmax_rows.
//
// Shapes: N = B*T token rows, H query heads, K kv heads (G = H / K per kv
// head), hd head dim, D hidden, S key slots. q is [N, H*hd]; k and v are
// [N, K*hd] unless strided (KV cache).
#pragma once

#include <cstdint>
#include <functional>

namespace rlf::cpu {

// Threads the kernels below run on (a ThreadTeam of their own,
// model/cpu_team.h; default 1). A process-wide setting like
// at::set_num_threads, set by apply_cpu_threads (model/cpu_threads.h); call
// it while no kernel runs. Results do not depend on it: each output element
// is computed by one thread in a fixed order.
void set_kernel_threads(int threads);
int kernel_threads();
// Runs f(begin, end) over [0, n) in blocks of one row on those threads
// (serially when there is one, or when called from inside a kernel).
void parallel_rows(int64_t n, const std::function<void(int64_t, int64_t)>& f);

// y[n, o] = dot(x[n], w[o]) (+ bias[o]) for n < N, o < O: x [N, I], w [O, I]
// (a Linear's weight), y [N, O], all row-major. For the few rows of decoding:
// every weight row is read once for all N rows (OpenBLAS's sgemm packs the
// weight first, a second pass over memory when N is small). Each y element
// sums in the same order whatever N and the thread count.
void matmul_wt(const float* x, const float* w, const float* bias, float* y, int64_t N, int64_t I, int64_t O);
// The same product with w in bf16 (its raw bits, [O, I] row-major), each
// weight widened exactly to fp32 as it is read: y equals matmul_wt's over
// the widened weight bit for bit (same sums in the same order), while the
// weight's bytes streamed are half. Decoding with bf16 weights on any CPU
// (model/cpu_bf16_linear.h).
void matmul_wt_bf16(const float* x, const uint16_t* w, const float* bias, float* y, int64_t N, int64_t I,
                    int64_t O);
// The same product with the weight packed into column panels (pack_panels):
// y[n, o] = sum over i in order of x[n, i] * w[o, i] (one fused multiply-add
// per term, from 0), then + bias[o]. The kernel keeps 8 input rows x 32
// outputs in registers and streams each panel front to back once for all N
// rows: no horizontal sums (matmul_wt's dot products pay 16 per 4x4 block)
// and no packing per call (OpenBLAS's sgemm packs the weight every time).
// Each element's sum is the same whatever N, the row's place in the batch,
// the thread count and the instruction set (AVX-512, AVX2 and the portable
// loop all add the products one by one in order; the portable loop only
// matches where the compiler fuses, so it is not promised bit-equal).
// Measured on the 2-core Zen 4 (2026-11-27, bench/matmul_kernels.cpp):
// 124-195 GFLOP/s at 32-64 rows against matmul_wt's 59-115 and OpenBLAS
// sgemm's 74-139.
constexpr int64_t kPanelWidth = 32;
// Floats of w [O, I] packed: ceil(O / 32) panels of [I][32] (the last
// panel's columns past O are zeros).
int64_t panel_floats(int64_t O, int64_t I);
// Packs w [O, I] (row-major) into `out` (panel_floats(O, I) floats,
// 64-byte aligned): out[(p * I + i) * 32 + j] = w[p * 32 + j, i].
void pack_panels(const float* w, int64_t O, int64_t I, float* out);
void matmul_panels(const float* x, const float* panels, const float* bias, float* y, int64_t N, int64_t I, int64_t O);
// Up to this many rows, matmul_panels asks for the next panel into L2 while
// it multiplies one (software prefetch; the sums are untouched): with so few
// rows the first pass over a panel waits on memory. On the 2-core AMD EPYC
// Zen 3 (2026-11-29, bench/matmul_kernels.cpp, two rounds alternated) it
// took 1 row from 6.6-7.9 to 7.6-9.3 GFLOP/s and 4-12 rows 19-53 to 31-66;
// at 16 rows it was level, and at 32-64 it lost 10-30 % (those passes hide
// the stream already). Measured on that CPU only.
constexpr int64_t kPanelPrefetchMaxRows = 12;
// True when these kernels were built with AVX2 + FMA (or AVX-512): the
// panel kernel is then vectorised and fuses every multiply-add. A portable
// build returns false and decoding keeps matmul_wt (model/packed_weights.h).
bool vector_kernels();

// The largest N for which matmul_wt_into (model/cpu_fast_forward.h) takes
// matmul_wt when it has no packed panels: at 64 rows it and OpenBLAS's sgemm were level (76.6 vs 79.4 ms
// for a stories110M step's matmuls), below it matmul_wt was faster (47 vs 61
// ms at 32, 13.6 vs 35.0 at 1; docs/DESIGN.md, 2026-11-26).
constexpr int64_t kMatmulWtMaxRows = 64;

// The sampler's normalisers, per row n of logits [N, V]: lse[n] =
// logsumexp(logits[n]) and probs[n] = softmax(logits[n] * inv_t[n])
// (inv_t[n] > 0; probs [N, V]). Exponentials by a ~1 ulp polynomial, sums in
// 8 lanes per block of 1,024 values, blocks added in double. Rows run in
// parallel.
void softmax_rows(const float* logits, const float* inv_t, int64_t N, int64_t V, float* lse, float* probs);

// The training loss's normaliser, per row n of logits [N, V], with the same
// exponentials and sums as softmax_rows (so the trainer's log-probs are the
// sampler's): lse[n] = logsumexp(logits[n]) and, when entropy is not null,
// entropy[n] = -sum_i p_i log p_i of p = softmax(logits[n]). Rows whose
// maximum is not finite get NaN.
void logsumexp_rows(const float* logits, int64_t N, int64_t V, float* lse, float* entropy);
// Gradient of logits[n, targets[n]] - lse[n] times g[n] with respect to the
// logits: dx[n, i] = g[n] * ([i == targets[n]] - exp(logits[n, i] - lse[n])).
void logprob_backward_rows(const float* logits, const float* lse, const int64_t* targets, const float* g, int64_t N,
                           int64_t V, float* dx);

// Products with a few weight rows per input row (a classifier's logits over
// each token's kept set, model/kept_logits.h): x [N, D], w [V, D], ids
// [N, M], every id in [0, V).
// out[n, j] = dot(x[n], w[ids[n, j]]) (out [N, M]; the sum in dot()'s order).
void gathered_dots(const float* x, const float* w, const int64_t* ids, int64_t N, int64_t M, int64_t D, float* out);
// dx[n] = sum over j in order of g[n, j] * w[ids[n, j]] (dx [N, D], overwritten).
void gathered_dots_backward_input(const float* g, const float* w, const int64_t* ids, int64_t N, int64_t M, int64_t D,
                                  float* dx);
// dw[ids[n, j]] += g[n, j] * x[n] for every (n, j) with g[n, j] != 0, each dw
// row summing its terms in (n, j) order (dw [V, D], added to): threads own
// ranges of the vocabulary, so the result does not depend on their number.
void gathered_dots_backward_weight(const float* g, const float* x, const int64_t* ids, int64_t N, int64_t M, int64_t D,
                                   int64_t V, float* dw);

// y[i] += x[i] for i < n (a residual add; exact, whatever the threads).
void add_inplace(float* y, const float* x, int64_t n);
// y[n] = w * x[n] * r[n], r[n] = 1/sqrt(mean(x[n]^2) + eps); r may be null.
void rms_norm_forward(const float* x, const float* w, float* y, float* r, int64_t N, int64_t D, float eps);
// Gradients of rms_norm_forward: dx [N, D] (overwritten) and dw [D] (added to).
void rms_norm_backward(const float* x, const float* w, const float* r, const float* dy, float* dx, float* dw,
                       int64_t N, int64_t D);

// Rotate-half RoPE in place on the first rd dimensions of each head of
// x [N, heads, hd] (rd = hd but for partial rotary), with rows of the tables
// (cos/sin [positions, rd]) at pos[n]. `inverse` applies the transpose (the
// backward of the rotation).
void rope_inplace(float* x, const int64_t* pos, const float* cos_table, const float* sin_table, int64_t N,
                  int64_t heads, int64_t hd, int64_t rd, bool inverse);

// A prefix that cached rows share (a group's prompt): positions [0, len) of
// the row are read from here, element (kv head kh, position s, i) at
// base + kh*s1 + s*s2 + i.
struct SharedPrefix {
  const float* keys = nullptr;
  const float* values = nullptr;
  int64_t len = 0;
  int64_t s1 = 0, s2 = 0;
};

// Where attention reads keys and values: element (row b, kv head kh, slot s,
// i) is at base + b*s0 + kh*s1 + s*s2 + i. With `prefix` (cached only, one
// entry per row; len 0 = none) row b's positions below prefix[b].len are
// read from its prefix and position p >= len from the row's slot p - len.
struct KeyLayout {
  const float* keys = nullptr;
  const float* values = nullptr;
  int64_t s0 = 0, s1 = 0, s2 = 0;
  const SharedPrefix* prefix = nullptr;
};

struct AttentionShape {
  int64_t B = 0, T = 0, H = 0, K = 0, hd = 0;
  float scale = 1.0f;   // scores multiplier: 1/sqrt(hd), or Gemma's query_pre_attn_scalar^-1/2
  int64_t window = 0;   // > 0: a query at position p sees keys at positions p - window < s <= p
  float softcap = 0;    // > 0: scores become softcap·tanh(scores / softcap) (Gemma 2)
  // Uncached only: true = a query at an invalid token (valid[n] == 0) is not
  // computed (zeros out, a zero probs row), and the backward does not read
  // its dout, which must be 0 (a padding-free forward drops those outputs).
  // false = every query attends, padding included (the module path's grid).
  bool drop_invalid_queries = false;
};

// Causal attention. With `cached` the query at position p attends positions
// [0, p] of its row (its shared prefix, then its own slots); otherwise it attends this call's tokens s (slot = token
// index) with pos[s] <= pos[t] and valid[s] (valid may be null). A window
// keeps the last `window` positions of those. out is
// [N, H*hd]. `probs` (optional, uncached only) receives the softmax
// [B, H, T, T] (0 where not visible). A query that sees nothing (a padding
// token past a window of padding) gets zeros, as the module path gives it.
void attention_forward(const float* q, const KeyLayout& kv, const int64_t* pos, const uint8_t* valid, bool cached,
                       const AttentionShape& s, float* out, float* probs);

// Backward of uncached attention given the saved probs: dq [N, H*hd], dk and
// dv [N, K*hd] (all overwritten). `valid` (may be null) is the forward's;
// with s.drop_invalid_queries a row's queries past its last valid token are
// skipped (their dq is 0).
void attention_backward(const float* q, const float* k, const float* v, const float* probs, const float* dout,
                        const AttentionShape& s, const int64_t* pos, const uint8_t* valid, float* dq, float* dk,
                        float* dv);

// a = silu(g) * u, elementwise over n values; in place into g when a == g.
void swiglu_forward(const float* g, const float* u, float* a, int64_t n);
void swiglu_backward(const float* g, const float* u, const float* da, float* dg, float* du, int64_t n);

// The gated MLP's activation: SiLU (Llama's SwiGLU) or tanh-approximated
// GELU (Gemma's GeGLU, transformers' "gelu_pytorch_tanh").
enum class GluActivation { Silu = 0, GeluTanh = 1 };
// a = act(g) * u and its gradients, elementwise (in place into g when a == g).
void glu_forward(GluActivation act, const float* g, const float* u, float* a, int64_t n);
void glu_backward(GluActivation act, const float* g, const float* u, const float* da, float* dg, float* du, int64_t n);

// One AdamW step over n elements, torch.optim.AdamW's arithmetic per element
// in fp32 (train/optimizer.cpp's fused CPU path): g = grad * clip;
// w = w * decay; m = b1 m + (1 - b1) g; v = b2 v + (1 - b2) g^2;
// w = w - step_size * m / (sqrt(v) / sqrt_bc2 + eps). The gradient is fp32
// (g32) or bf16 (g16, its raw bits): exactly one is given. w is the fp32
// parameter or master copy; out16, when given, receives w rounded to bf16
// (to nearest even, as c10::BFloat16). Elementwise: the same result on any
// number of threads. Here, rather than beside the optimiser, so it is built
// with the kernels' instruction set and vectorised, square root and
// division included.
struct AdamWScalars {
  float clip, decay, b1, one_minus_b1, b2, one_minus_b2, sqrt_bc2, eps, step_size;
};
void adamw_step(const float* g32, const uint16_t* g16, float* w, float* m, float* v, uint16_t* out16, int64_t n,
                const AdamWScalars& k);

}  // namespace rlf::cpu

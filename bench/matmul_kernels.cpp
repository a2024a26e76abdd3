/* Decoding's matrix products, alone: rlf's two kernels against OpenBLAS's
 * sgemm on the same inputs, y [N, O] = x [N, I] @ w [O, I]^T in fp32:
 *   matmul_wt      dot products of rows (cpu::matmul_wt, the unpacked path)
 *   matmul_panels  outer products over the weight packed into column panels
 *                  (cpu::pack_panels + cpu::matmul_panels, what the engine
 *                  decodes with)
 *   sgemm          cblas_sgemm, the call LibTorch's linear makes
 * For each shape the weight is repeated until the copies fill 64 MB (a
 * decoding step streams its weights from memory, not from cache), and one
 * pass multiplies x by every copy. Prints one JSON line per shape: median ms
 * per pass over 20 passes and GFLOP/s, per kernel, and the largest
 * difference of matmul_panels from the products summed one by one in input
 * order with fused multiply-adds (its promised order: 0 when it holds).
 * Built without LibTorch, against the kernels themselves and OpenBLAS:
 *   g++ -std=c++20 -O3 -march=native -fno-math-errno -fno-trapping-math -I. \
 *       bench/matmul_kernels.cpp model/cpu_kernels.cpp model/cpu_team.cpp -lpthread \
 *       /usr/lib/x86_64-linux-gnu/libopenblas.so.0 -o matmul_kernels
 *   OPENBLAS_NUM_THREADS=2 ./matmul_kernels [threads=2] [N I O ...]
 * Without shapes it runs stories15M's (I 288: projections 288 -> 288, 768,
 * the classifier 288 -> 32000) at 32 rows and stories110M's (768 -> 768,
 * 768 -> 32000, 2048 -> 768) at 64, and 768 -> 768 at 1, 8, 128 and 512. */
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "model/cpu_kernels.h"

extern "C" void cblas_sgemm(int order, int trans_a, int trans_b, int m, int n, int k, float alpha, const float* a,
                            int lda, const float* b, int ldb, float beta, float* c, int ldc);

namespace {

struct Aligned {
  float* p;
  explicit Aligned(size_t n) : p(static_cast<float*>(std::aligned_alloc(64, (n * sizeof(float) + 63) / 64 * 64))) {}
  ~Aligned() { std::free(p); }
  Aligned(const Aligned&) = delete;
  Aligned& operator=(const Aligned&) = delete;
};

void run(int64_t N, int64_t I, int64_t O) {
  const int64_t copies = std::max<int64_t>(1, (int64_t{64} << 20) / (I * O * 4));
  const int64_t pf = rlf::cpu::panel_floats(O, I);
  Aligned w(copies * I * O), panels(copies * pf), x(N * I), y(N * O);
  std::mt19937 gen(1);
  std::normal_distribution<float> nd;
  for (int64_t k = 0; k < copies * I * O; ++k) w.p[k] = nd(gen) * 0.05f;
  for (int64_t k = 0; k < N * I; ++k) x.p[k] = nd(gen);
  const auto tp = std::chrono::steady_clock::now();
  for (int64_t c = 0; c < copies; ++c) rlf::cpu::pack_panels(w.p + c * I * O, O, I, panels.p + c * pf);
  const double pack_ms = 1e3 * std::chrono::duration<double>(std::chrono::steady_clock::now() - tp).count();
  const double gflop = 2.0 * N * I * O * copies / 1e9;
  const char* names[3] = {"matmul_wt", "matmul_panels", "sgemm"};
  double med[3];
  for (int k = 0; k < 3; ++k) {
    std::vector<double> ms;
    for (int r = 0; r < 20; ++r) {
      const auto t0 = std::chrono::steady_clock::now();
      for (int64_t c = 0; c < copies; ++c) {
        const float* wc = w.p + c * I * O;
        if (k == 0) rlf::cpu::matmul_wt(x.p, wc, nullptr, y.p, N, I, O);
        if (k == 1) rlf::cpu::matmul_panels(x.p, panels.p + c * pf, nullptr, y.p, N, I, O);
        if (k == 2) cblas_sgemm(101, 111, 112, N, O, I, 1.0f, x.p, I, wc, I, 0.0f, y.p, O);  // row-major, x @ w^T
      }
      ms.push_back(1e3 * std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    std::sort(ms.begin(), ms.end());
    med[k] = ms[ms.size() / 2];
  }
  // matmul_panels against the ordered sum, on the last copy
  rlf::cpu::matmul_panels(x.p, panels.p + (copies - 1) * pf, nullptr, y.p, N, I, O);
  const float* wl = w.p + (copies - 1) * I * O;
  double order_diff = 0;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t o = 0; o < O; ++o) {
      float s = 0.0f;
      for (int64_t i = 0; i < I; ++i) s = std::fma(x.p[n * I + i], wl[o * I + i], s);
      order_diff = std::max(order_diff, static_cast<double>(std::fabs(s - y.p[n * O + o])));
    }
  std::printf("{\"N\":%ld,\"I\":%ld,\"O\":%ld,\"copies\":%ld", static_cast<long>(N), static_cast<long>(I),
              static_cast<long>(O), static_cast<long>(copies));
  for (int k = 0; k < 3; ++k)
    std::printf(",\"%s_ms\":%.3f,\"%s_gflop_s\":%.1f", names[k], med[k], names[k], gflop / (med[k] / 1e3));
  std::printf(",\"pack_ms\":%.1f,\"panels_vs_ordered_sum\":%g}\n", pack_ms, order_diff);
}

}  // namespace

int main(int argc, char** argv) {
  const int threads = argc > 1 ? std::atoi(argv[1]) : 2;
  if (threads < 1 || (argc > 2 && (argc - 2) % 3 != 0)) {
    std::fprintf(stderr, "usage: matmul_kernels [threads=2] [N I O ...]\n");
    return 2;
  }
  rlf::cpu::set_kernel_threads(threads);
  std::vector<int64_t> s;
  for (int a = 2; a < argc; ++a) s.push_back(std::atoll(argv[a]));
  if (s.empty())
    s = {32, 288, 288, 32, 288, 768, 32, 288, 32000, 64, 768, 768,  64,  768, 32000,
         64, 2048, 768, 1, 768, 768, 8,  768, 768, 128, 768, 768, 512, 768, 768};
  for (size_t k = 0; k < s.size(); k += 3) {
    if (s[k] < 1 || s[k + 1] < 1 || s[k + 2] < 1) {
      std::fprintf(stderr, "usage: matmul_kernels [threads=2] [N I O ...] (each > 0)\n");
      return 2;
    }
    run(s[k], s[k + 1], s[k + 2]);
  }
  return 0;
}

// rlf's own CPU pieces below the transformer: the matrix-vector kernel
// (cpu::matmul_wt) and the panel kernel (cpu::matmul_panels) against
// LibTorch's matmul, the sampler's normalisers
// (cpu::softmax_rows) against LibTorch's, attention's dropped padding
// queries, the thread team that runs the kernels, and weights moved into
// huge pages.
#include <gtest/gtest.h>

#include <sys/resource.h>

#include <array>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "model/cpu_fast_forward.h"
#include "model/cpu_kernels.h"
#include "model/cpu_team.h"
#include "model/huge_pages.h"
#include "model/packed_weights.h"

namespace rlf {
namespace {

struct ThreadsGuard {
  int before = cpu::kernel_threads();
  ~ThreadsGuard() { cpu::set_kernel_threads(before); }
};

torch::Tensor matmul_wt(const torch::Tensor& x, const torch::Tensor& w, const torch::Tensor& bias) {
  auto y = torch::empty({x.size(0), w.size(0)}, torch::kFloat32);
  cpu::matmul_wt(x.data_ptr<float>(), w.data_ptr<float>(), bias.defined() ? bias.data_ptr<float>() : nullptr,
                 y.data_ptr<float>(), x.size(0), x.size(1), w.size(0));
  return y;
}

// Every shape class: widths with and without a vector tail (768, 100, 5),
// row counts that are and are not multiples of the 4-row blocks, 1 to 64
// input rows, with and without bias; against LibTorch in double precision.
TEST(MatmulWt, MatchesLibTorchForEveryShape) {
  ThreadsGuard g;
  cpu::set_kernel_threads(2);
  torch::manual_seed(0);
  for (int64_t I : {768, 100, 5})
    for (int64_t O : {1, 7, 130})
      for (int64_t N : {1, 2, 3, 7, 8, 64})  // 7: blocks of 4, 2 and 1 input rows
        for (bool with_bias : {false, true}) {
          auto x = torch::randn({N, I}), w = torch::randn({O, I});
          auto bias = with_bias ? torch::randn({O}) : torch::Tensor();
          auto ref = x.to(torch::kFloat64).mm(w.to(torch::kFloat64).t());
          if (with_bias) ref += bias.to(torch::kFloat64);
          const double err = (matmul_wt(x, w, bias).to(torch::kFloat64) - ref).abs().max().item<double>();
          EXPECT_LT(err, 1e-4 * std::sqrt(static_cast<double>(I))) << "N " << N << " I " << I << " O " << O;
        }
}

// A row's result does not depend on the other rows (batch invariance) nor on
// the thread count: bit for bit.
TEST(MatmulWt, RowsAreIndependentOfBatchAndThreads) {
  ThreadsGuard g;
  torch::manual_seed(1);
  auto x = torch::randn({7, 300}), w = torch::randn({258, 300}), bias = torch::randn({258});
  cpu::set_kernel_threads(1);
  auto one_thread = matmul_wt(x, w, bias);
  cpu::set_kernel_threads(3);
  auto three = matmul_wt(x, w, bias);
  EXPECT_TRUE(torch::equal(one_thread, three));
  for (int64_t n = 0; n < 7; ++n)
    EXPECT_TRUE(torch::equal(matmul_wt(x.narrow(0, n, 1).contiguous(), w, bias), three.narrow(0, n, 1))) << n;
}

// matmul_wt_into takes the kernel up to kMatmulWtMaxRows rows and LibTorch
// above; both agree with LibTorch's linear.
TEST(MatmulWt, IntoChoosesAPathAndAgreesWithLinear) {
  torch::manual_seed(2);
  auto w = torch::randn({40, 24}), bias = torch::randn({40});
  for (int64_t N : {int64_t{1}, cpu::kMatmulWtMaxRows, cpu::kMatmulWtMaxRows + 1}) {
    auto x = torch::randn({N, 24});
    auto out = torch::empty({N, 40});
    matmul_wt_into(x, w, bias, out);
    EXPECT_TRUE(torch::allclose(out, torch::nn::functional::linear(x, w, bias), 1e-5, 1e-5)) << N;
  }
}

torch::Tensor pack(const torch::Tensor& w) {
  auto panels = torch::empty({cpu::panel_floats(w.size(0), w.size(1))});
  cpu::pack_panels(w.data_ptr<float>(), w.size(0), w.size(1), panels.data_ptr<float>());
  return panels;
}

torch::Tensor matmul_panels(const torch::Tensor& x, const torch::Tensor& panels, int64_t O,
                            const torch::Tensor& bias) {
  auto y = torch::empty({x.size(0), O}, torch::kFloat32);
  cpu::matmul_panels(x.data_ptr<float>(), panels.data_ptr<float>(), bias.defined() ? bias.data_ptr<float>() : nullptr,
                     y.data_ptr<float>(), x.size(0), x.size(1), O);
  return y;
}

// The panel layout by hand: element (o, i) of w sits at panel o / 32, row i,
// column o % 32; the last panel's columns past O are zeros.
TEST(MatmulPanels, PackedLayoutIsColumnPanels) {
  auto w = torch::arange(70 * 3, torch::kFloat32).view({70, 3});  // O 70: panels of 32, 32, 6
  auto p = pack(w);
  ASSERT_EQ(p.numel(), 3 * 3 * 32);
  auto pa = p.accessor<float, 1>();
  for (int64_t o = 0; o < 96; ++o)
    for (int64_t i = 0; i < 3; ++i)
      EXPECT_EQ(pa[((o / 32) * 3 + i) * 32 + o % 32], o < 70 ? w[o][i].item<float>() : 0.0f) << o << " " << i;
}

// Against LibTorch in double precision for every shape class: outputs that
// fill whole panels or not (32, 70, 1), input widths 768, 100, 5, row counts
// around the row blocks (1..9, 17, 64, 130), with and without bias; and each
// element equal to the products added one by one in order (fused
// multiply-adds from 0), the order the kernel promises.
TEST(MatmulPanels, MatchesLibTorchAndTheOrderedSum) {
  ThreadsGuard g;
  cpu::set_kernel_threads(2);
  torch::manual_seed(5);
  for (int64_t I : {768, 100, 5})
    for (int64_t O : {32, 70, 1})
      for (int64_t N : {1, 2, 3, 5, 6, 7, 8, 9, 17, 64, 130})
        for (bool with_bias : {false, true}) {
          auto x = torch::randn({N, I}), w = torch::randn({O, I});
          auto bias = with_bias ? torch::randn({O}) : torch::Tensor();
          auto ref = x.to(torch::kFloat64).mm(w.to(torch::kFloat64).t());
          if (with_bias) ref += bias.to(torch::kFloat64);
          auto y = matmul_panels(x, pack(w), O, bias);
          const double err = (y.to(torch::kFloat64) - ref).abs().max().item<double>();
          EXPECT_LT(err, 1e-4 * std::sqrt(static_cast<double>(I))) << "N " << N << " I " << I << " O " << O;
          // the ordered sum of one element per row (last column), bit for
          // bit (vectorised builds: the portable loop need not fuse)
          for (int64_t n = 0; cpu::vector_kernels() && n < N; n += 4) {
            const float* xr = x.data_ptr<float>() + n * I;
            const float* wr = w.data_ptr<float>() + (O - 1) * I;
            float s = 0.0f;
            for (int64_t i = 0; i < I; ++i) s = std::fma(xr[i], wr[i], s);
            if (with_bias) s += bias[O - 1].item<float>();
            EXPECT_EQ(y[n][O - 1].item<float>(), s) << "N " << N << " I " << I << " O " << O << " row " << n;
          }
        }
}

// A row's result does not depend on the other rows, nor on the thread count.
TEST(MatmulPanels, RowsAreIndependentOfBatchAndThreads) {
  ThreadsGuard g;
  torch::manual_seed(6);
  auto x = torch::randn({19, 300}), w = torch::randn({258, 300}), bias = torch::randn({258});
  auto p = pack(w);
  cpu::set_kernel_threads(1);
  auto one_thread = matmul_panels(x, p, 258, bias);
  cpu::set_kernel_threads(3);
  auto three = matmul_panels(x, p, 258, bias);
  EXPECT_TRUE(torch::equal(one_thread, three));
  for (int64_t n = 0; n < 19; ++n)
    EXPECT_TRUE(torch::equal(matmul_panels(x.narrow(0, n, 1).contiguous(), p, 258, bias), three.narrow(0, n, 1)))
        << n;
  // matmul_wt_into takes the panels when given them, for any row count
  auto out = torch::empty({19, 258});
  matmul_wt_into(x, w, bias, out, p.data_ptr<float>());
  EXPECT_TRUE(torch::equal(out, three));
}

// The sampler's normalisers against LibTorch: temperature 1 and others, a
// vocabulary that is not a multiple of the blocks, extreme logits; a row with
// NaN or Inf gets a NaN normaliser (the engine reports it).
TEST(SoftmaxRows, MatchLibTorchAndFlagNonFiniteRows) {
  ThreadsGuard g;
  cpu::set_kernel_threads(2);
  torch::manual_seed(4);
  const int64_t N = 5, V = 32001;
  auto logits = torch::randn({N, V}) * 4;
  logits[3][7] = 60.0f;  // one dominant token
  std::vector<float> inv_t = {1.0f, 2.0f, 0.5f, 1.0f, 1.0f / 0.7f};
  auto lse = torch::empty({N}), probs = torch::empty({N, V});
  cpu::softmax_rows(logits.data_ptr<float>(), inv_t.data(), N, V, lse.data_ptr<float>(), probs.data_ptr<float>());
  auto x64 = logits.to(torch::kFloat64);
  EXPECT_LT((lse.to(torch::kFloat64) - x64.logsumexp(-1)).abs().max().item<double>(), 2e-6);
  for (int64_t n = 0; n < N; ++n) {
    auto ref = torch::softmax(x64[n] * inv_t[static_cast<size_t>(n)], -1);
    EXPECT_LT((probs[n].to(torch::kFloat64) - ref).abs().max().item<double>(), 1e-6) << n;
    EXPECT_NEAR(probs[n].sum().item<double>(), 1.0, 1e-5) << n;
  }
  // The sampler's filtered rows take the normaliser alone from
  // logsumexp_rows: the same bits as softmax_rows'.
  auto lse_alone = torch::empty({N});
  cpu::logsumexp_rows(logits.data_ptr<float>(), N, V, lse_alone.data_ptr<float>(), nullptr);
  EXPECT_TRUE(torch::equal(lse_alone, lse));
  logits[1][100] = NAN;
  logits[2][5] = INFINITY;
  cpu::softmax_rows(logits.data_ptr<float>(), inv_t.data(), N, V, lse.data_ptr<float>(), probs.data_ptr<float>());
  EXPECT_TRUE(std::isnan(lse[1].item<float>()));
  EXPECT_TRUE(std::isnan(lse[2].item<float>()));
  EXPECT_TRUE(std::isfinite(lse[0].item<float>()));
}

// Attention with drop_invalid_queries (what a padding-free forward asks):
// the valid queries' outputs, probabilities and every gradient are exactly
// those of the full grid's attention (padding queries included) when the
// dropped queries' output gradients are 0; the dropped queries get zeros.
// Right padding and a hole, grouped heads, with and without a window.
TEST(Attention, DroppedPaddingQueriesChangeNothingElse) {
  ThreadsGuard g;
  cpu::set_kernel_threads(2);
  torch::manual_seed(6);
  const int64_t B = 3, T = 9, H = 4, K = 2, hd = 12, N = B * T;
  auto q = torch::randn({N, H * hd}), k = torch::randn({N, K * hd}), v = torch::randn({N, K * hd});
  auto pos = torch::arange(T, torch::kInt64).repeat({B});
  auto valid = torch::ones({B, T}, torch::kUInt8);
  valid[0].narrow(0, 4, 5).fill_(0);  // lengths 4, 9, and 7 with a hole at 2
  valid[2].narrow(0, 7, 2).fill_(0);
  valid[2][2] = 0;
  const auto query_valid = valid.view({N, 1}).to(torch::kBool);
  auto dout = torch::randn({N, H * hd}).masked_fill(query_valid.logical_not(), 0.0f);
  for (int64_t window : {0, 3}) {
    std::array<torch::Tensor, 2> out, probs, dq, dk, dv;
    for (int drop = 0; drop < 2; ++drop) {
      cpu::AttentionShape sh{B, T, H, K, hd, 0.3f};
      sh.window = window;
      sh.drop_invalid_queries = drop == 1;
      const cpu::KeyLayout kv{k.data_ptr<float>(), v.data_ptr<float>(), T * K * hd, hd, K * hd};
      out[drop] = torch::empty({N, H * hd});
      probs[drop] = torch::empty({B, H, T, T});
      cpu::attention_forward(q.data_ptr<float>(), kv, pos.data_ptr<int64_t>(), valid.data_ptr<uint8_t>(), false, sh,
                             out[drop].data_ptr<float>(), probs[drop].data_ptr<float>());
      dq[drop] = torch::empty_like(q), dk[drop] = torch::empty_like(k), dv[drop] = torch::empty_like(v);
      cpu::attention_backward(q.data_ptr<float>(), k.data_ptr<float>(), v.data_ptr<float>(),
                              probs[drop].data_ptr<float>(), dout.data_ptr<float>(), sh, pos.data_ptr<int64_t>(),
                              valid.data_ptr<uint8_t>(), dq[drop].data_ptr<float>(), dk[drop].data_ptr<float>(),
                              dv[drop].data_ptr<float>());
    }
    const auto kept = query_valid.expand({N, H * hd});
    EXPECT_TRUE(torch::equal(out[1].masked_select(kept), out[0].masked_select(kept))) << window;
    EXPECT_EQ(out[1].masked_select(kept.logical_not()).abs().max().item<float>(), 0.0f) << window;
    const auto kept_probs = valid.view({B, 1, T, 1}).to(torch::kBool).expand({B, H, T, T});
    EXPECT_TRUE(torch::equal(probs[1].masked_select(kept_probs), probs[0].masked_select(kept_probs))) << window;
    EXPECT_EQ(probs[1].masked_select(kept_probs.logical_not()).abs().max().item<float>(), 0.0f) << window;
    EXPECT_GT(probs[0].masked_select(kept_probs.logical_not()).abs().max().item<float>(), 0.0f)
        << "the full grid attends from padding too";
    EXPECT_TRUE(torch::equal(dq[1], dq[0])) << window;
    EXPECT_TRUE(torch::equal(dk[1], dk[0])) << window;
    EXPECT_TRUE(torch::equal(dv[1], dv[0])) << window;
    EXPECT_GT(dk[1].abs().max().item<float>(), 0.0f);
  }
}

TEST(ThreadTeam, RunsEveryTaskOnceAndNestedCallsSerially) {
  cpu::ThreadTeam team(3);
  EXPECT_EQ(team.threads(), 3);
  for (int round = 0; round < 2000; ++round) {  // many short jobs: the hand-over between jobs
    const int64_t tasks = 1 + round % 17;
    std::vector<std::atomic<int>> hits(static_cast<size_t>(tasks));
    std::atomic<int> nested{0};
    team.run(tasks, [&](int64_t t) {
      hits[static_cast<size_t>(t)]++;
      if (t == 0) team.run(4, [&](int64_t) { nested++; });  // from inside a task: runs on this thread
    });
    for (int64_t t = 0; t < tasks; ++t) ASSERT_EQ(hits[static_cast<size_t>(t)].load(), 1) << round << " " << t;
    ASSERT_EQ(nested.load(), 4);
  }
}

TEST(ThreadTeam, TasksGoToThreadsRoundRobin) {
  cpu::ThreadTeam team(2);
  std::vector<std::thread::id> ran(6);
  team.run(6, [&](int64_t t) { ran[static_cast<size_t>(t)] = std::this_thread::get_id(); });
  EXPECT_EQ(ran[0], std::this_thread::get_id());  // the caller is thread 0
  for (size_t t = 2; t < 6; ++t) EXPECT_EQ(ran[t], ran[t - 2]) << t;
  EXPECT_NE(ran[0], ran[1]);
}

TEST(ThreadTeam, WorkersAsleepWakeForTheNextJob) {
  cpu::ThreadTeam team(2, /*spin_us=*/1);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // past the spin: workers wait on the futex
  std::atomic<int> done{0};
  team.run(8, [&](int64_t) { done++; });
  EXPECT_EQ(done.load(), 8);
}

// After reuse_large_allocations(), a freed 256 MiB block serves the next one
// of that size: touching it again costs (almost) no page faults, where a
// fresh mapping (glibc's default above 32 MiB) costs one per 4 KiB page
// (65,536).
TEST(LargeAllocations, AFreedBlockIsReusedWithoutPageFaults) {
#if defined(__GLIBC__)
  ASSERT_TRUE(reuse_large_allocations());
  auto faults = [] {
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    return static_cast<int64_t>(u.ru_minflt);
  };
  static void* volatile sink = nullptr;  // keeps the compiler from eliding the blocks
  const size_t bytes = size_t{256} << 20;
  std::vector<int64_t> touched;
  for (int round = 0; round < 3; ++round) {
    const int64_t before = faults();
    void* p = std::malloc(bytes);
    ASSERT_NE(p, nullptr);
    std::memset(p, round + 1, bytes);
    sink = p;
    std::free(sink);
    touched.push_back(faults() - before);
  }
  EXPECT_GT(touched[0], 30000);  // the first touch: fresh pages
  EXPECT_LT(touched[1], 1000) << "the freed block went back to the system";
  EXPECT_LT(touched[2], 1000) << "the freed block went back to the system";
#else
  GTEST_SKIP() << "glibc only";
#endif
}

TEST(HugePages, MovesLargeParametersAndKeepsThemParameters) {
  auto lin = torch::nn::Linear(torch::nn::LinearOptions(1024, 1024));  // 4 MiB weight, 4 KiB bias
  torch::manual_seed(3);
  const auto before = lin->weight.detach().clone();
  const auto* impl = lin->weight.unsafeGetTensorImpl();
  const void* old_data = lin->weight.data_ptr();
  const void* bias_data = lin->bias.data_ptr();
  EXPECT_EQ(place_in_huge_pages(*lin), int64_t{1024} * 1024 * 4);
  EXPECT_EQ(lin->weight.unsafeGetTensorImpl(), impl);  // the same parameter object
  EXPECT_NE(lin->weight.data_ptr(), old_data);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(lin->weight.data_ptr()) % (2u << 20), 0u);
  EXPECT_EQ(lin->bias.data_ptr(), bias_data);  // small: left where it was
  EXPECT_TRUE(torch::equal(lin->weight.detach(), before));
  EXPECT_TRUE(lin->weight.requires_grad());
  // Still trains: a gradient step writes into the new memory.
  torch::optim::SGD opt(lin->parameters(), 0.1);
  lin->forward(torch::ones({2, 1024})).sum().backward();
  opt.step();
  EXPECT_FALSE(torch::equal(lin->weight.detach(), before));
}

// Decoding's packed panels sit in huge pages like the weights they copy:
// 2 MiB-aligned memory of their own above 2 MiB, ordinary memory below.
TEST(HugePages, PackedPanelsAreInHugePages) {
  auto big = empty_in_huge_pages({3, 1000, 1000}, torch::TensorOptions().dtype(torch::kFloat32));
  EXPECT_EQ(big.sizes(), torch::IntArrayRef({3, 1000, 1000}));
  EXPECT_EQ(reinterpret_cast<uintptr_t>(big.data_ptr()) % (2u << 20), 0u);
  big.fill_(1.5f);  // writable, every element
  EXPECT_EQ(big.sum().item<double>(), 4.5e6);
  auto small = empty_in_huge_pages({16}, torch::TensorOptions().dtype(torch::kFloat32));
  EXPECT_EQ(small.numel(), 16);
  torch::manual_seed(5);
  const auto w = torch::randn({1024, 768});  // 3 MiB of weights -> 3 MiB of panels
  PackedWeights packed;
  packed.pack(w);
  const float* panels = packed.find(w);
  ASSERT_NE(panels, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(panels) % (2u << 20), 0u);
  EXPECT_EQ(panels[0], w[0][0].item<float>());  // pack_panels' layout: panel 0, input 0, column 0
  EXPECT_EQ(panels[5 * 32 + 7], w[7][5].item<float>());
  const auto tiny = torch::randn({64, 64});
  packed.pack(tiny);
  ASSERT_NE(packed.find(tiny), nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(packed.find(tiny)) % 64, 0u);  // the kernel's aligned loads
}

}  // namespace
}  // namespace rlf

// Linear layers with bf16 weights on the CPU (model/cpu_bf16_linear.h): the
// widening kernel against the fp32 kernel over the widened weight (bit for
// bit), linear_layer() and its gradients against float64 products rounded once
// to bf16, on both of its routes, and LibTorch's route for everything else.
#include <gtest/gtest.h>

#include <cmath>

#include "model/cpu_bf16_linear.h"
#include "model/cpu_features.h"
#include "model/cpu_kernels.h"

namespace rlf {
namespace {

struct Bf16ThreadsGuard {
  int before = cpu::kernel_threads();
  ~Bf16ThreadsGuard() { cpu::set_kernel_threads(before); }
};

torch::Tensor bf16_kernel(const torch::Tensor& x, const torch::Tensor& w16, const torch::Tensor& bias, bool widened) {
  auto y = torch::empty({x.size(0), w16.size(0)}, torch::kFloat32);
  const float* b = bias.defined() ? bias.data_ptr<float>() : nullptr;
  if (widened) {
    const torch::Tensor w = w16.to(torch::kFloat32).contiguous();
    cpu::matmul_wt(x.data_ptr<float>(), w.data_ptr<float>(), b, y.data_ptr<float>(), x.size(0), x.size(1), w.size(0));
  } else {
    cpu::matmul_wt_bf16(x.data_ptr<float>(), reinterpret_cast<const uint16_t*>(w16.data_ptr<at::BFloat16>()), b,
                        y.data_ptr<float>(), x.size(0), x.size(1), w16.size(0));
  }
  return y;
}

// |got - want| within a bf16 rounding of want (2^-8 relative, plus 2^-8 of
// the terms' magnitude for the fp32 sums' own error and cancellation).
void expect_bf16_close(const torch::Tensor& got, const torch::Tensor& want, const torch::Tensor& magnitude,
                       const char* what) {
  ASSERT_EQ(got.scalar_type(), torch::kBFloat16) << what;
  ASSERT_EQ(got.sizes(), want.sizes()) << what;
  const auto err = (got.to(torch::kFloat64) - want).abs();
  const auto bound = want.abs() * std::ldexp(1.0, -8) + magnitude * 1e-6 + 1e-30;
  EXPECT_TRUE((err <= bound).all().item<bool>())
      << what << ": worst excess " << (err - bound).max().item<double>() << " (largest error "
      << err.max().item<double>() << ")";
}

// Widths with and without a vector tail, 1 to 9 rows, 1 to 37 outputs, with
// and without bias, on one and two threads.
TEST(Bf16Linear, KernelEqualsTheFp32KernelOverTheWidenedWeight) {
  Bf16ThreadsGuard guard;
  torch::manual_seed(3);
  for (int threads : {1, 2}) {
    cpu::set_kernel_threads(threads);
    for (int64_t I : {1, 7, 8, 17, 32, 100})
      for (int64_t O : {1, 4, 5, 37})
        for (int64_t N : {1, 2, 3, 9})
          for (bool with_bias : {false, true}) {
            const auto x = torch::randn({N, I});
            const auto w16 = torch::randn({O, I}).to(torch::kBFloat16);
            const auto bias = with_bias ? torch::randn({O}) : torch::Tensor();
            EXPECT_TRUE(torch::equal(bf16_kernel(x, w16, bias, false), bf16_kernel(x, w16, bias, true)))
                << "I " << I << " O " << O << " N " << N << " bias " << with_bias << " threads " << threads;
          }
  }
}

// Both routes of linear_layer(): the kernel (up to kMatmulWtMaxRows rows) and the
// widened weight through LibTorch's fp32 matmul (more rows, on a CPU without
// AVX-512; elsewhere LibTorch's own bf16 product, held to the same bound).
TEST(Bf16Linear, ForwardIsTheProductRoundedOnceToBf16) {
  torch::manual_seed(4);
  for (int64_t rows : {int64_t{1}, int64_t{5}, cpu::kMatmulWtMaxRows, cpu::kMatmulWtMaxRows + 30})
    for (bool with_bias : {false, true}) {
      const auto x = torch::randn({rows, 2, 48}).to(torch::kBFloat16);
      const auto w = torch::randn({40, 48}).to(torch::kBFloat16);
      const auto b = with_bias ? torch::randn({40}).to(torch::kBFloat16) : torch::Tensor();
      const auto y = linear_layer(x, w, b);
      const auto x64 = x.to(torch::kFloat64), w64 = w.to(torch::kFloat64);
      auto want = torch::matmul(x64, w64.t());
      if (with_bias) want = want + b.to(torch::kFloat64);
      const auto magnitude = torch::matmul(x64.abs(), w64.abs().t());
      if (cpu_bf16_linear_applies(x, w, b))
        expect_bf16_close(y, want, magnitude, "forward");
      else
        EXPECT_LT(((y.to(torch::kFloat64) - want).abs() / (magnitude + 1e-9)).max().item<double>(), 0.05);
    }
}

TEST(Bf16Linear, GradientsSumInFp32AndTheGradForwardEqualsTheInferenceOne) {
  torch::manual_seed(5);
  for (int64_t rows : {int64_t{3}, cpu::kMatmulWtMaxRows + 10})
    for (bool with_bias : {true, false}) {
      const auto x = torch::randn({rows, 24}).to(torch::kBFloat16).requires_grad_(true);
      const auto w = torch::randn({16, 24}).to(torch::kBFloat16).requires_grad_(true);
      const auto b = with_bias ? torch::randn({16}).to(torch::kBFloat16).requires_grad_(true) : torch::Tensor();
      const auto g = torch::randn({rows, 16}).to(torch::kBFloat16);
      torch::Tensor no_grad;
      {
        torch::NoGradGuard ng;
        no_grad = linear_layer(x, w, b);
      }
      const auto y = linear_layer(x, w, b);
      ASSERT_TRUE(y.requires_grad());
      EXPECT_TRUE(torch::equal(y.detach(), no_grad)) << rows;
      y.backward(g);
      if (!cpu_bf16_linear_applies(x, w, b)) continue;  // LibTorch's own backward
      const auto g64 = g.to(torch::kFloat64);
      const auto x64 = x.detach().to(torch::kFloat64), w64 = w.detach().to(torch::kFloat64);
      expect_bf16_close(x.grad(), g64.mm(w64), g64.abs().mm(w64.abs()), "d input");
      expect_bf16_close(w.grad(), g64.t().mm(x64), g64.abs().t().mm(x64.abs()), "d weight");
      if (with_bias) expect_bf16_close(b.grad(), g64.sum(0), g64.abs().sum(0), "d bias");
      // The input's gradient alone, as the chunked classifier asks for it.
      EXPECT_TRUE(torch::equal(linear_layer_input_grad(g, w.detach()), x.grad()));
    }
  // Only the input asks for a gradient (a frozen weight, LoRA's base).
  const auto x = torch::randn({4, 8}).to(torch::kBFloat16).requires_grad_(true);
  const auto w = torch::randn({3, 8}).to(torch::kBFloat16);
  linear_layer(x, w).sum().backward();
  ASSERT_TRUE(x.grad().defined());
  EXPECT_FALSE(w.grad().defined());
}

// Attention's batched products: rounded once to bf16 where LibTorch's bf16
// product is the reference gemm; its gradients flow through the casts.
TEST(Bf16Linear, BatchedProductsAreRoundedOnceWithGradients) {
  torch::manual_seed(7);
  const int64_t rows = cpu::kMatmulWtMaxRows + 5;  // fewer (decoding's queries) stay on LibTorch
  const auto a = torch::randn({2, 3, rows, 16}).to(torch::kBFloat16).requires_grad_(true);
  const auto b = torch::randn({2, 3, 16, 9}).to(torch::kBFloat16).requires_grad_(true);
  const auto y = matmul_layer(a, b);
  ASSERT_EQ(y.scalar_type(), torch::kBFloat16);
  const auto a64 = a.detach().to(torch::kFloat64), b64 = b.detach().to(torch::kFloat64);
  const auto g = torch::randn({2, 3, rows, 9}).to(torch::kBFloat16);
  y.backward(g);
  const auto g64 = g.to(torch::kFloat64);
  if (!cpu_bf16_matmul_fast()) {
    expect_bf16_close(y.detach(), torch::matmul(a64, b64), torch::matmul(a64.abs(), b64.abs()), "a b");
    expect_bf16_close(a.grad(), torch::matmul(g64, b64.transpose(2, 3)),
                      torch::matmul(g64.abs(), b64.abs().transpose(2, 3)), "d a");
    expect_bf16_close(b.grad(), torch::matmul(a64.transpose(2, 3), g64),
                      torch::matmul(a64.abs().transpose(2, 3), g64.abs()), "d b");
  } else {
    EXPECT_TRUE(torch::equal(y.detach(), torch::matmul(a.detach(), b.detach())));
  }
  const auto f = torch::randn({4, 6}), h = torch::randn({6, 2});
  EXPECT_TRUE(torch::equal(matmul_layer(f, h), torch::matmul(f, h)));
}

TEST(Bf16Linear, EverythingElseIsLibTorchsLinear) {
  torch::manual_seed(6);
  const auto x = torch::randn({4, 12}), w = torch::randn({6, 12}), b = torch::randn({6});
  EXPECT_FALSE(cpu_bf16_linear_applies(x, w, b));
  EXPECT_TRUE(torch::equal(linear_layer(x, w, b), torch::nn::functional::linear(x, w, b)));
  // bf16 input with an fp32 weight, or an fp32 bias, is not this route's either
  EXPECT_FALSE(cpu_bf16_linear_applies(x.to(torch::kBFloat16), w, b));
  EXPECT_FALSE(cpu_bf16_linear_applies(x.to(torch::kBFloat16), w.to(torch::kBFloat16), b));
  EXPECT_TRUE(cpu_bf16_linear_applies(x.to(torch::kBFloat16), w.to(torch::kBFloat16)));
  // more rows than decoding's take this route only where LibTorch's bf16 product is the reference gemm
  const auto many = torch::randn({cpu::kMatmulWtMaxRows + 1, 12}).to(torch::kBFloat16);
  EXPECT_EQ(cpu_bf16_linear_applies(many, w.to(torch::kBFloat16)), !cpu_bf16_matmul_fast());
  // a width mismatch is LibTorch's error
  EXPECT_THROW(linear_layer(torch::randn({2, 5}).to(torch::kBFloat16), w.to(torch::kBFloat16)), c10::Error);
}

}  // namespace
}  // namespace rlf

// The EMA of a model's weights (train/ema_weights.h) against its closed form
// computed by hand, and the trainer calling it once per applied optimiser step.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "tests/support/test_env.h"
#include "tests/train/run_fixtures.h"
#include "train/ema_weights.h"

namespace rlf {
namespace {

// Sets every parameter of `m` to base[name] * scale + shift.
void set_ema_test_weights(CausalLMImpl& m, const std::map<std::string, torch::Tensor>& base, double scale,
                          double shift) {
  torch::NoGradGuard ng;
  for (auto& p : m.named_parameters()) p.value().copy_(base.at(p.key()) * scale + shift);
}

// theta_i = base * (i + 1) + 0.1 * i for i = 0..k; after k updates with d:
//   ema = d^k theta_0 + (1 - d) sum_{i=1..k} d^(k-i) theta_i, per element (fp64 by hand).
TEST(EmaWeights, KUpdatesEqualTheClosedForm) {
  CausalLM from = test::tiny_random_model(3);
  std::map<std::string, torch::Tensor> base;
  for (const auto& p : from->named_parameters()) base[p.key()] = p.value().detach().clone().to(torch::kFloat64);
  const double d = 0.8;
  const int k = 5;
  // The fp32 weights the model holds, in fp64.
  auto theta = [&](const std::string& name, int i) {
    return (base.at(name) * (i + 1) + 0.1 * i).to(torch::kFloat32).to(torch::kFloat64);
  };
  set_ema_test_weights(*from, base, 1, 0);  // theta_0
  EmaWeights ema(*from, d);
  for (int i = 1; i <= k; ++i) {
    set_ema_test_weights(*from, base, i + 1, 0.1 * i);
    ema.update(*from);
  }
  EXPECT_EQ(ema.n_updates(), k);
  EXPECT_EQ(ema.decay(), d);
  double worst = 0;
  size_t n = 0;
  for (const auto& p : ema.model()->named_parameters()) {
    torch::Tensor want = std::pow(d, k) * theta(p.key(), 0);
    for (int i = 1; i <= k; ++i) want = want + (1 - d) * std::pow(d, k - i) * theta(p.key(), i);
    worst = std::max(worst, (p.value().to(torch::kFloat64) - want).abs().max().item<double>());
    EXPECT_FALSE(p.value().requires_grad()) << p.key();
    EXPECT_EQ(p.value().scalar_type(), torch::kFloat32) << p.key();
    ++n;
  }
  EXPECT_EQ(n, base.size());
  EXPECT_LT(worst, 1e-6);
  // The source's weights are read, not written.
  for (const auto& p : from->named_parameters())
    EXPECT_TRUE(torch::equal(p.value().to(torch::kFloat64), theta(p.key(), k))) << p.key();
}

// A bf16 model's average is kept in fp32: steps far below bf16's resolution still move it.
TEST(EmaWeights, Bf16ModelAveragesInFp32) {
  CausalLM from = test::tiny_random_model(4);
  from->to(torch::kBFloat16);
  EmaWeights ema(*from, 0.99);
  const auto before = ema.model()->named_parameters()[std::string("model.norm.weight")].clone();
  {
    torch::NoGradGuard ng;
    for (auto& p : from->parameters()) p.add_(0.25);
  }
  ema.update(*from);
  const auto after = ema.model()->named_parameters()[std::string("model.norm.weight")];
  EXPECT_NEAR((after - before).mean().item<double>(), 0.0025, 1e-5);  // (1 - 0.99) * 0.25, exact in fp32
}

TEST(EmaWeights, DecayOutsideTheOpenIntervalIsAnError) {
  CausalLM from = test::tiny_random_model(5);
  for (double d : {0.0, 1.0, -0.5, std::nan("")})
    EXPECT_NE(test::error_of([&] { EmaWeights(*from, d); }).find("EMA weights: the decay must be in (0, 1)"),
              std::string::npos)
        << d;
}

}  // namespace
}  // namespace rlf

// A classifier's logits at a few ids per position (model/kept_logits.h)
// against the whole classifier's outputs gathered at those ids: values and
// both gradients, on rlf's fp32 kernels and on LibTorch's gathers (float64
// here, the path CUDA and bf16 take); the kernels' bits whatever their
// thread count; and the policy's log-probs and entropy over kept sets
// (sampling-mask replay) computed from those logits alone.
#include <gtest/gtest.h>

#include "model/cpu_kernels.h"
#include "model/kept_logits.h"
#include "model/loader.h"
#include "model/transformer.h"
#include "tests/support/tensors.h"
#include "util/error.h"

namespace rlf {
namespace {

using test::max_diff;

struct Outputs {
  torch::Tensor values, dh, dw;
};

// Values and gradients of sum(g * logits) at `ids`, by kept_logits or by the full product gathered.
Outputs run(const torch::Tensor& hidden, const torch::Tensor& weight, const torch::Tensor& ids, const torch::Tensor& g,
            bool kept) {
  auto h = hidden.clone().requires_grad_(true), w = weight.clone().requires_grad_(true);
  auto out = kept ? kept_logits(h, w, ids) : torch::nn::functional::linear(h, w).gather(1, ids);
  (out * g).sum().backward();
  return {out.detach(), h.grad(), w.grad()};
}

TEST(KeptLogits, MatchTheWholeClassifierGatheredWithBothGradients) {
  for (auto dtype : {torch::kFloat32, torch::kFloat64})
    for (int64_t D : {int64_t{24}, int64_t{29}}) {  // 29: a dot product with a tail past the 8 lanes
      SCOPED_TRACE(std::string(dtype == torch::kFloat32 ? "fp32 kernels" : "float64 gathers") + " D " +
                   std::to_string(D));
      torch::manual_seed(3);
      const int64_t N = 37, V = 50, M = 7;
      auto opt = torch::TensorOptions().dtype(dtype);
      auto hidden = torch::randn({N, D}, opt), weight = torch::randn({V, D}, opt);
      auto ids = torch::randint(0, V, {N, M}, torch::kInt64);
      ids.select(1, 1).copy_(ids.select(1, 0));  // an id twice in one row: its gradient sums both
      auto g = torch::randn({N, M}, opt);
      g[4].zero_();  // a row with no gradient at all
      const Outputs a = run(hidden, weight, ids, g, true), b = run(hidden, weight, ids, g, false);
      const double tol = dtype == torch::kFloat32 ? 1e-5 : 1e-12;
      for (auto [x, y, what] : {std::tuple{a.values, b.values, "values"}, std::tuple{a.dh, b.dh, "d hidden"},
                                std::tuple{a.dw, b.dw, "d weight"}}) {
        ASSERT_TRUE(x.defined() && y.defined()) << what;
        EXPECT_EQ(x.scalar_type(), dtype) << what;
        EXPECT_LE(max_diff(x, y), tol * std::max(1.0, y.abs().max().item<double>())) << what;
      }
      EXPECT_GT(b.dw.abs().sum().item<double>(), 0.0);
    }
}

TEST(KeptLogits, TheKernelsGiveTheSameBitsOnOneOrTwoThreads) {
  torch::manual_seed(4);
  const int64_t N = 64, D = 40, V = 300, M = 9;
  auto hidden = torch::randn({N, D}), weight = torch::randn({V, D});
  auto ids = torch::randint(0, V, {N, M}, torch::kInt64);
  auto g = torch::randn({N, M});
  const int before = cpu::kernel_threads();
  Outputs out[2];
  for (int threads : {1, 2}) {
    cpu::set_kernel_threads(threads);
    out[threads - 1] = run(hidden, weight, ids, g, true);
  }
  cpu::set_kernel_threads(before);
  EXPECT_TRUE(torch::equal(out[0].values, out[1].values));
  EXPECT_TRUE(torch::equal(out[0].dh, out[1].dh));
  EXPECT_TRUE(torch::equal(out[0].dw, out[1].dw));
}

TEST(KeptLogits, AFrozenSideGetsNoGradientAndNoGradModeIsAPlainCall) {
  torch::manual_seed(5);
  auto hidden = torch::randn({6, 16}), weight = torch::randn({20, 16}).requires_grad_(true);
  auto ids = torch::randint(0, 20, {6, 3}, torch::kInt64);
  kept_logits(hidden, weight, ids).sum().backward();
  EXPECT_FALSE(hidden.grad().defined());
  ASSERT_TRUE(weight.grad().defined());
  EXPECT_NEAR(weight.grad().sum().item<double>(), hidden.sum(1).unsqueeze(1).expand({6, 3}).sum().item<double>(), 1e-4);
  torch::NoGradGuard ng;
  EXPECT_FALSE(kept_logits(hidden, weight, ids).requires_grad());
}

TEST(KeptLogits, RejectsIdsOutsideTheVocabularyAndWrongShapes) {
  auto hidden = torch::randn({2, 8}), weight = torch::randn({10, 8});
  EXPECT_THROW(kept_logits(hidden, weight, torch::tensor({{1, 10}, {0, 2}}, torch::kInt64)), Error);
  EXPECT_THROW(kept_logits(hidden, weight, torch::tensor({{1, -1}, {0, 2}}, torch::kInt64)), Error);
  EXPECT_THROW(kept_logits(hidden, weight, torch::tensor({{1}, {0}, {2}}, torch::kInt64)), Error);
  EXPECT_THROW(kept_logits(hidden, torch::randn({10, 7}), torch::tensor({{1}, {0}}, torch::kInt64)), Error);
}

// The policy's entropy over kept sets (what `policy/entropy` logs under
// sampling-mask replay): -Σ p log p of the distribution renormalised over
// each position's ids; positions without ids: the whole vocabulary's.
TEST(KeptLogits, TheLoggedEntropyIsTheKeptSetsOwn) {
  Json j = {{"vocab_size", 96},        {"hidden_size", 32},        {"intermediate_size", 64},
            {"num_hidden_layers", 1},  {"num_attention_heads", 4}, {"num_key_value_heads", 2},
            {"max_position_embeddings", 32}, {"rms_norm_eps", 1e-6}, {"tie_word_embeddings", true},
            {"architectures", {"Qwen2ForCausalLM"}}};
  CausalLM m = make_random_model(ModelConfig::from_hf_json(j, "qwen2"), 7, torch::kFloat32, torch::kCPU);
  const int64_t B = 2, T = 5, V = 96, k = 4;
  torch::manual_seed(6);
  auto ids = torch::randint(0, V, {B, T}, torch::kInt64), targets = torch::randint(0, V, {B, T}, torch::kInt64);
  auto keep = torch::randint(0, V, {B, T, k}, torch::kInt64);
  keep.select(2, 0).copy_(targets);
  keep.select(2, k - 1).fill_(-1);
  keep[0][3].fill_(-1);
  auto positions = torch::arange(T, torch::kInt64).view({1, T}).expand({B, T}).contiguous();
  auto hidden = m->forward_hidden(ids, positions);
  auto [lp, entropy] = m->token_logprobs_entropy(hidden, targets, false, 0, keep);
  torch::NoGradGuard ng;
  auto logits = m->logits(hidden).to(torch::kFloat32);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < T; ++t) {
      torch::Tensor z = logits[b][t];
      if (!(b == 0 && t == 3)) z = z.index_select(0, keep[b][t].narrow(0, 0, k - 1));
      const auto p = torch::log_softmax(z, 0);
      EXPECT_NEAR(entropy[b][t].item<double>(), -(p.exp() * p).sum().item<double>(), 1e-5) << b << "," << t;
    }
}

}  // namespace
}  // namespace rlf

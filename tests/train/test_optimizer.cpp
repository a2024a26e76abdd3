// The AdamW optimiser: the same updates as torch::optim::AdamW (the outside
// reference) in fp32, exact fp32 master-weight steps for bf16 parameters,
// clipping by global norm, skipped steps on NaN/Inf that change nothing, and
// a tiny model whose parameters move.
#include <gtest/gtest.h>

#include "model/cpu_kernels.h"
#include "model/loader.h"
#include "model/lora.h"
#include "train/optimizer.h"

namespace rlf {
namespace {

using Named = std::vector<std::pair<std::string, torch::Tensor>>;

// Three parameters: a matrix, a bias and a norm weight (the last two are
// "no decay" by default).
Named make_params(uint64_t seed, torch::ScalarType dtype = torch::kFloat32) {
  torch::manual_seed(seed);
  Named p = {{"layer.weight", torch::randn({4, 3})},
             {"layer.bias", torch::randn({4})},
             {"model.norm.weight", torch::randn({3})}};
  for (auto& [n, t] : p) t = t.to(dtype).set_requires_grad(true);
  return p;
}

// A deterministic, non-quadratic loss of the parameters.
torch::Tensor loss_of(const Named& p, int step) {
  torch::Tensor x = torch::arange(12, torch::kFloat32).reshape({4, 3}) / 7.0 - 0.5 + 0.1 * step;
  torch::Tensor w = p[0].second.to(torch::kFloat32), b = p[1].second.to(torch::kFloat32),
                g = p[2].second.to(torch::kFloat32);
  return ((w * x).sum(1) + b).pow(2).sum() + (w * g).sin().sum() + b.tanh().sum() * 0.3;
}

double max_abs_diff(const torch::Tensor& a, const torch::Tensor& b) {
  return (a.to(torch::kFloat64) - b.to(torch::kFloat64)).abs().max().item<double>();
}

// Runs ours and torch::optim::AdamW (with a no-decay group for the bias and
// the norm weight, and torch::nn::utils::clip_grad_norm_ when clipping) for 6
// steps with changing gradients and learning rates; returns the largest
// parameter difference seen.
double compare_with_torch(double max_grad_norm, double* moved, int* n_clipped) {
  const double wd = 0.1;
  const double lrs[] = {1e-2, 2e-2, 3e-2, 3e-2, 2e-2, 1e-2};
  Named ours = make_params(3), ref = make_params(3);
  OptimizerOptions o;
  o.beta1 = 0.9;
  o.beta2 = 0.99;
  o.eps = 1e-8;
  o.weight_decay = wd;
  o.max_grad_norm = max_grad_norm;
  Optimizer opt(ours, o);
  EXPECT_EQ(opt.states()[0].weight_decay, wd);
  EXPECT_EQ(opt.states()[1].weight_decay, 0.0);
  EXPECT_EQ(opt.states()[2].weight_decay, 0.0);

  auto group_options = [](double decay) {
    return std::make_unique<torch::optim::AdamWOptions>(
        torch::optim::AdamWOptions(1e-2).betas({0.9, 0.99}).eps(1e-8).weight_decay(decay));
  };
  std::vector<torch::optim::OptimizerParamGroup> groups;
  groups.emplace_back(std::vector<torch::Tensor>{ref[0].second}, group_options(wd));
  groups.emplace_back(std::vector<torch::Tensor>{ref[1].second, ref[2].second}, group_options(0.0));
  torch::optim::AdamW torch_opt(std::move(groups), torch::optim::AdamWOptions(1e-2));

  double worst = 0.0;
  for (int step = 0; step < 6; ++step) {
    opt.zero_grad();
    loss_of(ours, step).backward();
    StepResult r = opt.step(lrs[step]);
    EXPECT_TRUE(r.applied) << r.skip_reason;
    EXPECT_EQ(r.step, step + 1);
    torch_opt.zero_grad();
    loss_of(ref, step).backward();
    if (max_grad_norm > 0) {
      std::vector<torch::Tensor> ps = {ref[0].second, ref[1].second, ref[2].second};
      const double torch_norm = torch::nn::utils::clip_grad_norm_(ps, max_grad_norm);
      EXPECT_NEAR(r.grad_norm, torch_norm, 1e-5 * torch_norm);
      EXPECT_EQ(r.clipped, torch_norm > max_grad_norm);
      *n_clipped += r.clipped;
    }
    for (auto& g : torch_opt.param_groups()) static_cast<torch::optim::AdamWOptions&>(g.options()).lr(lrs[step]);
    torch_opt.step();
    for (size_t i = 0; i < ours.size(); ++i) worst = std::max(worst, max_abs_diff(ours[i].second, ref[i].second));
  }
  *moved = max_abs_diff(ours[0].second, make_params(3)[0].second);
  return worst;
}

TEST(Optimizer, MatchesTorchAdamWInFp32) {
  double moved = 0.0;
  int n_clipped = 0;
  const double diff = compare_with_torch(0.0, &moved, &n_clipped);
  EXPECT_LT(diff, 1e-6);
  EXPECT_GT(moved, 1e-2);  // the comparison is not vacuous
  // With clipping, active on some steps but not all.
  const double diff_clipped = compare_with_torch(15.0, &moved, &n_clipped);
  EXPECT_LT(diff_clipped, 1e-6);
  EXPECT_GT(n_clipped, 0);
  EXPECT_LT(n_clipped, 6);
  std::printf("max |ours - torch| = %.3g (no clipping), %.3g (clipping, %d of 6 steps clipped)\n", diff, diff_clipped,
              n_clipped);
}

// Large parameters (several parallel chunks of the fused CPU kernels, odd
// sizes) against torch::optim::AdamW with clip_grad_norm_, random gradients.
TEST(Optimizer, LargeParametersMatchTorchAdamW) {
  torch::manual_seed(21);
  // (both 2-D: rlf exempts 1-D weights from decay, torch's AdamW does not)
  Named ours = {{"a.weight", torch::randn({317, 411})}, {"b.weight", torch::randn({1, 100003})}};
  Named ref;
  for (auto& [n, t] : ours) {
    t.set_requires_grad(true);
    ref.emplace_back(n, t.detach().clone().set_requires_grad(true));
  }
  OptimizerOptions o;
  o.weight_decay = 0.05;
  o.max_grad_norm = 50.0;
  Optimizer opt(ours, o);
  torch::optim::AdamW torch_opt({ref[0].second, ref[1].second},
                                torch::optim::AdamWOptions(3e-3).betas({0.9, 0.999}).eps(1e-8).weight_decay(0.05));
  double worst = 0.0;
  int n_clipped = 0;
  for (int step = 0; step < 5; ++step) {
    for (size_t i = 0; i < ours.size(); ++i) {
      auto g = torch::randn(ours[i].second.sizes()) * (0.05 + 0.1 * step);
      ours[i].second.mutable_grad() = g.clone();
      ref[i].second.mutable_grad() = g.clone();
    }
    StepResult r = opt.step(3e-3);
    ASSERT_TRUE(r.applied);
    const double torch_norm = torch::nn::utils::clip_grad_norm_(std::vector<torch::Tensor>{ref[0].second, ref[1].second}, 50.0);
    EXPECT_NEAR(r.grad_norm, torch_norm, 1e-6 * torch_norm);
    EXPECT_EQ(r.clipped, torch_norm > 50.0);
    n_clipped += r.clipped;
    torch_opt.step();
    for (size_t i = 0; i < ours.size(); ++i) worst = std::max(worst, max_abs_diff(ours[i].second, ref[i].second));
  }
  EXPECT_LT(worst, 1e-6);
  EXPECT_GT(n_clipped, 0);
  EXPECT_LT(n_clipped, 5);
}

// The fused kernels run on the kernels' thread team (all cores, fp32
// included): the same bits on 1 and 3 threads (weights, moments, the norm).
TEST(Optimizer, StepsAreTheSameOnOneOrThreeKernelThreads) {
  const int before = cpu::kernel_threads();
  torch::Tensor after[2];
  double norms[2];
  for (int run = 0; run < 2; ++run) {
    cpu::set_kernel_threads(run == 0 ? 1 : 3);
    torch::manual_seed(5);
    Named p = {{"a.weight", torch::randn({7, 100003})}};
    p[0].second.set_requires_grad(true);
    OptimizerOptions o;
    o.weight_decay = 0.1;
    o.max_grad_norm = 1.0;
    Optimizer opt(p, o);
    for (int step = 0; step < 3; ++step) {
      p[0].second.mutable_grad() = torch::randn(p[0].second.sizes());
      norms[run] = opt.step(1e-3).grad_norm;
    }
    after[run] = p[0].second.detach().clone();
  }
  cpu::set_kernel_threads(before);
  EXPECT_TRUE(torch::equal(after[0], after[1]));
  EXPECT_EQ(norms[0], norms[1]);
}

TEST(Optimizer, Bf16ParamsStepFp32MastersExactly) {
  Named p = make_params(5, torch::kBFloat16);
  OptimizerOptions o;
  o.weight_decay = 0.01;
  o.max_grad_norm = 0.0;
  Optimizer opt(p, o);
  ASSERT_TRUE(opt.states()[0].master.defined());
  EXPECT_EQ(opt.states()[0].master.scalar_type(), torch::kFloat32);
  EXPECT_EQ(opt.states()[0].exp_avg.scalar_type(), torch::kFloat32);

  // The reference: an fp32 optimiser over fp32 copies given the same grads.
  Named ref;
  for (auto& [n, t] : p) ref.emplace_back(n, t.detach().to(torch::kFloat32).set_requires_grad(true));
  Optimizer ref_opt(ref, o);
  EXPECT_FALSE(ref_opt.states()[0].master.defined());  // fp32 params are their own master

  const double lr = 1e-3;
  for (int step = 0; step < 3; ++step) {
    opt.zero_grad();
    loss_of(p, step).backward();
    for (size_t i = 0; i < p.size(); ++i) {
      ASSERT_EQ(p[i].second.grad().scalar_type(), torch::kBFloat16);
      ref[i].second.mutable_grad() = p[i].second.grad().to(torch::kFloat32);
    }
    ASSERT_TRUE(opt.step(lr).applied);
    ASSERT_TRUE(ref_opt.step(lr).applied);
    for (size_t i = 0; i < p.size(); ++i) {
      const ParamState& s = opt.states()[i];
      EXPECT_TRUE(torch::equal(s.master, ref[i].second)) << p[i].first << ": master != exact fp32 update";
      EXPECT_EQ(p[i].second.scalar_type(), torch::kBFloat16);
      EXPECT_TRUE(torch::equal(p[i].second, s.master.to(torch::kBFloat16))) << p[i].first;
    }
  }
  // An update below bf16 resolution moves the master but not the parameter.
  Named q = {{"w", torch::full({8}, 1.0, torch::kBFloat16).set_requires_grad(true)}};
  OptimizerOptions oq;
  oq.max_grad_norm = 0.0;
  Optimizer tiny(q, oq);
  q[0].second.mutable_grad() = torch::ones({8}, torch::kBFloat16);
  ASSERT_TRUE(tiny.step(1e-5).applied);
  EXPECT_TRUE(torch::equal(q[0].second, torch::full({8}, 1.0, torch::kBFloat16)));
  EXPECT_NEAR(tiny.states()[0].master[0].item<double>(), 1.0 - 1e-5, 1e-7);
}

// Copies of every parameter and state tensor, for "nothing changed" checks.
std::vector<torch::Tensor> snapshot(const Optimizer& opt) {
  std::vector<torch::Tensor> out;
  for (const auto& s : opt.states()) {
    out.push_back(s.param.detach().clone());
    out.push_back(s.exp_avg.clone());
    out.push_back(s.exp_avg_sq.clone());
  }
  return out;
}

void expect_same(const std::vector<torch::Tensor>& a, const std::vector<torch::Tensor>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(torch::equal(a[i], b[i])) << "tensor " << i << " changed";
}

TEST(Optimizer, NonFiniteGradientOrLossSkipsTheStep) {
  Named p = make_params(7);
  Optimizer opt(p, {});
  opt.zero_grad();
  loss_of(p, 0).backward();
  ASSERT_TRUE(opt.step(1e-2).applied);  // some moments are non-zero now
  const auto before = snapshot(opt);

  opt.zero_grad();
  loss_of(p, 1).backward();
  p[1].second.mutable_grad()[2] = std::numeric_limits<float>::quiet_NaN();
  StepResult r = opt.step(1e-2);
  EXPECT_FALSE(r.applied);
  EXPECT_EQ(r.skip_reason, "gradient of 'layer.bias' is not finite (norm nan)");
  EXPECT_TRUE(std::isnan(r.grad_norm));
  EXPECT_EQ(r.step, 1);
  EXPECT_EQ(opt.step_count(), 1);
  EXPECT_EQ(opt.n_skipped(), 1);
  expect_same(before, snapshot(opt));

  p[1].second.mutable_grad()[2] = std::numeric_limits<float>::infinity();
  r = opt.step(1e-2);
  EXPECT_FALSE(r.applied);
  EXPECT_EQ(r.skip_reason, "gradient of 'layer.bias' is not finite (norm inf)");

  opt.zero_grad();
  loss_of(p, 1).backward();
  r = opt.step(1e-2, std::numeric_limits<double>::quiet_NaN());
  EXPECT_FALSE(r.applied);
  EXPECT_EQ(r.skip_reason, "loss is not finite (nan)");
  EXPECT_EQ(opt.n_skipped(), 3);
  expect_same(before, snapshot(opt));

  // The same gradients with a finite loss step normally.
  r = opt.step(1e-2, 1.25);
  EXPECT_TRUE(r.applied);
  EXPECT_EQ(opt.step_count(), 2);

  opt.zero_grad();
  r = opt.step(1e-2);
  EXPECT_FALSE(r.applied);
  EXPECT_EQ(r.skip_reason, "no parameter has a gradient (did backward() run?)");
}

TEST(Optimizer, ClipsByGlobalNormAndReportsThePreClipNorm) {
  Named p = {{"a", torch::zeros({2}).set_requires_grad(true)}, {"b", torch::zeros({1}).set_requires_grad(true)}};
  OptimizerOptions o;
  o.max_grad_norm = 1.0;
  Optimizer opt(p, o);
  p[0].second.mutable_grad() = torch::tensor({3.0f, 0.0f});
  p[1].second.mutable_grad() = torch::tensor({4.0f});
  EXPECT_DOUBLE_EQ(opt.grad_norm(), 5.0);
  StepResult r = opt.step(0.1);
  ASSERT_TRUE(r.applied);
  EXPECT_DOUBLE_EQ(r.grad_norm, 5.0);
  EXPECT_TRUE(r.clipped);
  // m = (1 - β1) · g · max_norm / (norm + 1e-6), as torch's clip_grad_norm_.
  const double coef = 1.0 / (5.0 + 1e-6);
  EXPECT_NEAR(opt.states()[0].exp_avg[0].item<double>(), 0.1 * 3.0 * coef, 1e-7);
  EXPECT_NEAR(opt.states()[1].exp_avg[0].item<double>(), 0.1 * 4.0 * coef, 1e-7);
  // The caller's gradients are left as they were.
  EXPECT_EQ(p[1].second.grad()[0].item<float>(), 4.0f);

  // Under the threshold nothing is scaled.
  Named q = {{"a", torch::zeros({1}).set_requires_grad(true)}};
  Optimizer opt2(q, o);
  q[0].second.mutable_grad() = torch::tensor({0.5f});
  r = opt2.step(0.1);
  EXPECT_FALSE(r.clipped);
  EXPECT_DOUBLE_EQ(r.grad_norm, 0.5);
  EXPECT_NEAR(opt2.states()[0].exp_avg[0].item<double>(), 0.05, 1e-8);
}

TEST(Optimizer, GradientAccumulationSumsMicroBatches) {
  Named a = make_params(9), b = make_params(9);
  OptimizerOptions o;
  o.max_grad_norm = 0.0;
  Optimizer opt_a(a, o), opt_b(b, o);
  opt_a.zero_grad();
  loss_of(a, 0).backward();
  loss_of(a, 1).backward();  // accumulates
  opt_b.zero_grad();
  (loss_of(b, 0) + loss_of(b, 1)).backward();
  ASSERT_TRUE(opt_a.step(1e-2).applied);
  ASSERT_TRUE(opt_b.step(1e-2).applied);
  for (size_t i = 0; i < a.size(); ++i) EXPECT_LT(max_abs_diff(a[i].second, b[i].second), 1e-7);
  opt_a.zero_grad();
  EXPECT_FALSE(a[0].second.grad().defined());
}

TEST(Optimizer, TinyModelParametersMove) {
  ModelConfig c = ModelConfig::preset("stories260K");
  c.num_hidden_layers = 1;
  CausalLM model = make_random_model(c, 1, torch::kBFloat16, torch::kCPU);
  std::map<std::string, torch::Tensor> before;
  for (auto& p : model->named_parameters()) before[p.key()] = p.value().detach().clone();
  OptimizerOptions o;
  o.weight_decay = 0.1;
  Optimizer opt(*model, o);
  EXPECT_EQ(opt.states().size(), before.size());
  torch::Tensor ids = torch::randint(3, 500, {2, 12}, torch::kInt64);
  torch::Tensor logits = model->forward(ids.slice(1, 0, 11)).to(torch::kFloat32);
  torch::Tensor loss = torch::nn::functional::cross_entropy(logits.reshape({-1, logits.size(2)}),
                                                            ids.slice(1, 1).reshape({-1}));
  opt.zero_grad();
  loss.backward();
  StepResult r = opt.step(1e-2, loss.item<double>());
  ASSERT_TRUE(r.applied) << r.skip_reason;
  EXPECT_GT(r.grad_norm, 0.0);
  int moved = 0;
  for (auto& p : model->named_parameters()) {
    EXPECT_EQ(p.value().scalar_type(), torch::kBFloat16);
    moved += !torch::equal(p.value(), before[p.key()]);
  }
  EXPECT_EQ(moved, static_cast<int>(before.size()));
}

// Every step bumps each updated parameter's version counter, as a LibTorch
// in-place op would, also where the fused kernel writes through raw
// pointers (fp32, and bf16 with fp32 masters): state derived from a weight
// (merged LoRA weights, decoding's packed panels) relies on it to notice the
// change. A parameter without a gradient is not touched.
TEST(Optimizer, StepsBumpTheVersionOfEveryParameterTheyChange) {
  for (auto dtype : {torch::kFloat32, torch::kBFloat16}) {
    Named p = make_params(11, dtype);
    Optimizer opt(p, OptimizerOptions{});
    opt.zero_grad();
    torch::Tensor loss = loss_of(p, 0);
    loss.backward();
    p[2].second.mutable_grad() = torch::Tensor();  // the norm weight gets no gradient
    std::vector<int64_t> before;
    for (auto& [n, t] : p) before.push_back(t._version());
    ASSERT_TRUE(opt.step(1e-2, loss.item<double>()).applied);
    EXPECT_GT(p[0].second._version(), before[0]) << dtype;
    EXPECT_GT(p[1].second._version(), before[1]) << dtype;
    EXPECT_EQ(p[2].second._version(), before[2]) << dtype;
  }
}

// Rollouts with merged LoRA inference (lora.merge_rollout) follow the
// adapters the optimizer trains: after a step the merged weight is W + s·B·A
// of the new adapters, not the one merged before the step.
TEST(Optimizer, MergedLoraInferenceFollowsTheTrainedAdapters) {
  ModelConfig c = ModelConfig::preset("stories260K");
  c.num_hidden_layers = 1;
  CausalLM model = make_random_model(c, 3, torch::kFloat32, torch::kCPU);
  LoraOptions lo;
  lo.rank = 2;
  lo.alpha = 4;
  lo.targets = {"q_proj"};
  add_lora(*model, lo, 4);
  set_lora_merged_inference(*model, true);
  auto& attn = *model->model->layers->ptr<DecoderLayerImpl>(0)->self_attn;
  const torch::Tensor before = lora_inference_weight(attn.q_proj, attn.q_lora).clone();
  Optimizer opt(*model, OptimizerOptions{});
  torch::Tensor ids = torch::randint(3, 500, {2, 12}, torch::kInt64);
  torch::Tensor logits = model->forward(ids.slice(1, 0, 11));
  torch::Tensor loss =
      torch::nn::functional::cross_entropy(logits.reshape({-1, logits.size(2)}), ids.slice(1, 1).reshape({-1}));
  opt.zero_grad();
  loss.backward();
  ASSERT_TRUE(opt.step(1e-2, loss.item<double>()).applied);
  torch::NoGradGuard ng;
  const torch::Tensor expect =
      attn.q_proj->weight + lo.scale() * attn.q_lora.B->weight.mm(attn.q_lora.A->weight);
  const torch::Tensor after = lora_inference_weight(attn.q_proj, attn.q_lora);
  EXPECT_GT((after - before).abs().max().item<double>(), 1e-4);  // the step moved the adapters
  EXPECT_LT((after - expect).abs().max().item<double>(), 1e-6);
}

TEST(Optimizer, OptionErrorsNameTheField) {
  auto error_of = [](OptimizerOptions o) {
    try {
      validate(o);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  OptimizerOptions o;
  o.beta1 = 1.5;
  EXPECT_EQ(error_of(o), "optim.beta1 = 1.5: must be in [0, 1) (typical: 0.9)");
  o = {};
  o.eps = 0;
  EXPECT_EQ(error_of(o), "optim.eps = 0: must be > 0 (typical: 1e-8)");
  o = {};
  o.max_grad_norm = -1;
  EXPECT_EQ(error_of(o), "optim.max_grad_norm = -1: must be >= 0 (0 disables clipping)");
  EXPECT_EQ(error_of({}), "");
  OptimizerOptions nd;
  EXPECT_TRUE(is_no_decay_param("model.layers.0.input_layernorm.weight", 1, nd));
  EXPECT_TRUE(is_no_decay_param("model.layers.0.self_attn.q_proj.bias", 1, nd));
  EXPECT_FALSE(is_no_decay_param("model.embed_tokens.weight", 2, nd));
  nd.decay_embeddings = false;
  EXPECT_TRUE(is_no_decay_param("model.embed_tokens.weight", 2, nd));
}

}  // namespace
}  // namespace rlf

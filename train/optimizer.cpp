#include "train/optimizer.h"

#include <c10/util/BFloat16.h>

#include <cmath>
#include <set>

#include "model/cpu_kernels.h"
#include "util/error.h"

namespace rlf {

namespace {

bool is_low_precision(const torch::Tensor& t) {
  return t.scalar_type() == torch::kBFloat16 || t.scalar_type() == torch::kFloat16;
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// ---- Fused CPU kernels ------------------------------------------------------
// On CPU the update runs as one pass over each parameter (read g, w, m, v;
// write w, m, v and the rounded parameter) instead of ~12 separate tensor ops,
// each a full pass over memory with its own dispatch. The arithmetic is
// torch.optim.AdamW's, per element, in fp32 (cpu::adamw_step,
// model/cpu_kernels.h, built vectorised with the kernels).

constexpr int64_t kGrain = 1 << 15;  // elements per parallel task

template <typename G>
double sum_of_squares(const G* g, int64_t n) {
  // Per-task partial sums in double, added in task order: the same sum
  // whatever the thread count.
  const int64_t n_tasks = (n + kGrain - 1) / kGrain;
  std::vector<double> partial(static_cast<size_t>(n_tasks), 0.0);
  cpu::parallel_rows(n_tasks, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t b = t * kGrain, e = std::min(n, b + kGrain);
      double acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};  // 8 lanes, vectorisable
      int64_t i = b;
      for (; i + 8 <= e; i += 8)
        for (int k = 0; k < 8; ++k) {
          const double x = static_cast<float>(g[i + k]);
          acc[k] += x * x;
        }
      double s = 0;
      for (int k = 0; k < 8; ++k) s += acc[k];
      for (; i < e; ++i) s += static_cast<double>(g[i]) * static_cast<double>(g[i]);
      partial[static_cast<size_t>(t)] = s;
    }
  });
  double s = 0;
  for (double x : partial) s += x;
  return s;
}

// True when s can take the fused CPU path: contiguous CPU tensors, fp32 state
// and master, a fp32 or bf16 gradient matching the parameter.
bool fused_cpu_ok(const ParamState& s) {
  const torch::Tensor& p = s.param;
  const torch::Tensor& g = p.grad();
  if (!p.device().is_cpu() || !g.defined() || !g.is_contiguous() || !p.is_contiguous()) return false;
  if (s.exp_avg.scalar_type() != torch::kFloat32 || !s.exp_avg.is_contiguous() || !s.exp_avg_sq.is_contiguous())
    return false;
  if (g.scalar_type() != p.scalar_type()) return false;
  if (p.scalar_type() == torch::kFloat32) return !s.master.defined();
  if (p.scalar_type() == torch::kBFloat16) return s.master.defined() && s.master.is_contiguous();
  return false;
}

// Squared L2 norm of a gradient, fp32 accumulation at least.
double grad_sq_norm(const torch::Tensor& g) {
  if (g.device().is_cpu() && g.is_contiguous()) {
    if (g.scalar_type() == torch::kFloat32) return sum_of_squares(g.data_ptr<float>(), g.numel());
    if (g.scalar_type() == torch::kBFloat16) return sum_of_squares(g.data_ptr<c10::BFloat16>(), g.numel());
  }
  const double n = g.detach().to(torch::kFloat32).norm().item<double>();
  return n * n;
}

}  // namespace

void validate(const OptimizerOptions& o) {
  auto in_unit = [](double x) { return std::isfinite(x) && x >= 0.0 && x < 1.0; };
  check(in_unit(o.beta1), "optim.beta1 = ", o.beta1, ": must be in [0, 1) (typical: 0.9)");
  check(in_unit(o.beta2), "optim.beta2 = ", o.beta2, ": must be in [0, 1) (typical: 0.999)");
  check(std::isfinite(o.eps) && o.eps > 0.0, "optim.eps = ", o.eps, ": must be > 0 (typical: 1e-8)");
  check(std::isfinite(o.weight_decay) && o.weight_decay >= 0.0, "optim.weight_decay = ", o.weight_decay,
        ": must be >= 0 (0 disables it)");
  check(std::isfinite(o.max_grad_norm) && o.max_grad_norm >= 0.0, "optim.max_grad_norm = ", o.max_grad_norm,
        ": must be >= 0 (0 disables clipping)");
}

bool is_no_decay_param(const std::string& name, int64_t dim, const OptimizerOptions& options) {
  if (!options.decay_norms_and_biases && (ends_with(name, ".bias") || dim <= 1)) return true;
  if (!options.decay_embeddings && name.find("embed_tokens") != std::string::npos) return true;
  return false;
}

Optimizer::Optimizer(const std::vector<std::pair<std::string, torch::Tensor>>& params,
                     const OptimizerOptions& options)
    : options_(options) {
  validate(options_);
  torch::NoGradGuard no_grad;
  std::set<std::string> seen;
  for (const auto& [name, param] : params) {
    if (!param.requires_grad()) continue;
    check(seen.insert(name).second, "optimizer: parameter '", name, "' is listed twice");
    check(param.is_floating_point(), "optimizer: parameter '", name, "' is not floating point (",
          c10::toString(param.scalar_type()), ")");
    ParamState s;
    s.name = name;
    s.param = param;
    const bool use_master = options_.master_weights && is_low_precision(param);
    if (use_master) s.master = param.detach().to(torch::kFloat32);  // a new fp32 tensor
    const auto state_dtype = use_master ? torch::kFloat32 : param.scalar_type();
    s.exp_avg = torch::zeros(param.sizes(), param.options().dtype(state_dtype));
    s.exp_avg_sq = torch::zeros(param.sizes(), param.options().dtype(state_dtype));
    s.weight_decay = is_no_decay_param(name, param.dim(), options_) ? 0.0 : options_.weight_decay;
    states_.push_back(std::move(s));
  }
  check(!states_.empty(), "optimizer: no parameter requires grad (nothing to train)");
}

static std::vector<std::pair<std::string, torch::Tensor>> module_params(torch::nn::Module& module) {
  std::vector<std::pair<std::string, torch::Tensor>> out;
  for (auto& p : module.named_parameters()) out.emplace_back(p.key(), p.value());
  return out;
}

Optimizer::Optimizer(torch::nn::Module& module, const OptimizerOptions& options)
    : Optimizer(module_params(module), options) {}

void Optimizer::zero_grad() {
  for (auto& s : states_) {
    if (s.param.grad().defined()) s.param.mutable_grad() = torch::Tensor();
  }
}

double Optimizer::grad_norm() const {
  torch::NoGradGuard no_grad;
  double sq = 0.0;
  for (const auto& s : states_) {
    if (s.param.grad().defined()) sq += grad_sq_norm(s.param.grad());
  }
  return std::sqrt(sq);
}

StepResult Optimizer::step(double lr, std::optional<double> loss) {
  torch::NoGradGuard no_grad;
  StepResult r;
  r.lr = lr;
  r.step = step_;
  check(std::isfinite(lr) && lr >= 0.0, "optimizer.step: learning rate ", lr, " must be finite and >= 0");

  // 1. Global gradient norm: norm of the per-parameter norms (as torch's
  //    clip_grad_norm_), accumulated in at least fp32; one host sync per
  //    parameter off the CPU, none on it.
  std::vector<double> sq_norms;
  std::vector<const ParamState*> with_grad;
  for (const auto& s : states_) {
    if (!s.param.grad().defined()) continue;
    sq_norms.push_back(grad_sq_norm(s.param.grad()));
    with_grad.push_back(&s);
  }
  auto skip = [&](std::string reason) {
    ++n_skipped_;
    r.applied = false;
    r.skip_reason = std::move(reason);
    return r;
  };
  if (with_grad.empty()) return skip("no parameter has a gradient (did backward() run?)");
  double total_sq = 0.0;
  for (double x : sq_norms) total_sq += x;
  r.grad_norm = std::sqrt(total_sq);

  // 2. Non-finite loss or gradients: skip, changing nothing.
  if (loss && !std::isfinite(*loss)) return skip(str("loss is not finite (", *loss, ")"));
  if (!std::isfinite(r.grad_norm)) {
    for (size_t i = 0; i < with_grad.size(); ++i) {
      const double n = std::sqrt(sq_norms[i]);
      if (!std::isfinite(n)) return skip(str("gradient of '", with_grad[i]->name, "' is not finite (norm ", n, ")"));
    }
    return skip(str("global gradient norm overflowed (", r.grad_norm, ")"));
  }

  // 3. Clipping coefficient (torch: max_norm / (norm + 1e-6), clamped to 1).
  double clip = 1.0;
  if (options_.max_grad_norm > 0.0) {
    clip = std::min(1.0, options_.max_grad_norm / (r.grad_norm + 1e-6));
    r.clipped = clip < 1.0;
  }

  // 4. AdamW update, in the state's dtype (fp32 with masters).
  ++step_;
  const double b1 = options_.beta1, b2 = options_.beta2;
  const double bias_correction1 = 1.0 - std::pow(b1, static_cast<double>(step_));
  const double bias_correction2 = 1.0 - std::pow(b2, static_cast<double>(step_));
  const double step_size = lr / bias_correction1;
  cpu::AdamWScalars k;
  k.clip = static_cast<float>(r.clipped ? clip : 1.0);
  k.b1 = static_cast<float>(b1);
  k.one_minus_b1 = static_cast<float>(1.0 - b1);
  k.b2 = static_cast<float>(b2);
  k.one_minus_b2 = static_cast<float>(1.0 - b2);
  k.sqrt_bc2 = static_cast<float>(std::sqrt(bias_correction2));
  k.eps = static_cast<float>(options_.eps);
  k.step_size = static_cast<float>(step_size);
  for (auto& s : states_) {
    if (!s.param.grad().defined()) continue;
    if (fused_cpu_ok(s)) {
      k.decay = static_cast<float>(1.0 - lr * s.weight_decay);
      float* m = s.exp_avg.data_ptr<float>();
      float* v = s.exp_avg_sq.data_ptr<float>();
      const int64_t n = s.param.numel();
      static_assert(sizeof(c10::BFloat16) == sizeof(uint16_t), "bf16 is 16 raw bits");
      if (s.param.scalar_type() == torch::kFloat32) {
        cpu::adamw_step(s.param.grad().data_ptr<float>(), nullptr, s.param.data_ptr<float>(), m, v, nullptr, n, k);
      } else {
        cpu::adamw_step(nullptr, reinterpret_cast<const uint16_t*>(s.param.grad().data_ptr<c10::BFloat16>()),
                        s.master.data_ptr<float>(), m, v, reinterpret_cast<uint16_t*>(s.param.data_ptr<c10::BFloat16>()),
                        n, k);
      }
      // The kernel wrote through raw pointers, which LibTorch does not see:
      // bump the version counter as an in-place op would, so state derived
      // from the weight (merged LoRA weights, packed decoding weights) knows
      // it changed.
      s.param.unsafeGetTensorImpl()->bump_version();
      continue;
    }
    torch::Tensor w = s.master.defined() ? s.master : s.param;
    torch::Tensor g = s.param.grad().detach().to(s.exp_avg.scalar_type());
    if (r.clipped) g = g * clip;
    if (s.weight_decay != 0.0) w.mul_(1.0 - lr * s.weight_decay);
    s.exp_avg.mul_(b1).add_(g, 1.0 - b1);
    s.exp_avg_sq.mul_(b2).addcmul_(g, g, 1.0 - b2);
    torch::Tensor denom = (s.exp_avg_sq.sqrt() / std::sqrt(bias_correction2)).add_(options_.eps);
    w.addcdiv_(s.exp_avg, denom, -step_size);
    if (s.master.defined()) s.param.copy_(s.master);  // round to the parameter's dtype
  }
  r.applied = true;
  r.step = step_;
  return r;
}

void Optimizer::sync_master_from_params() {
  torch::NoGradGuard no_grad;
  for (auto& s : states_) {
    if (s.master.defined()) s.master.copy_(s.param);
  }
}

std::map<std::string, torch::Tensor> Optimizer::state_tensors() const {
  std::map<std::string, torch::Tensor> out;
  for (const auto& s : states_) {
    out["exp_avg." + s.name] = s.exp_avg;
    out["exp_avg_sq." + s.name] = s.exp_avg_sq;
    if (s.master.defined()) out["master." + s.name] = s.master;
  }
  return out;
}

void Optimizer::load_state(const std::map<std::string, torch::Tensor>& tensors, int64_t step, int64_t n_skipped,
                           const std::string& source) {
  torch::NoGradGuard no_grad;
  check(step >= 0, source, ": optimizer step count ", step, " is negative");
  std::map<std::string, torch::Tensor> expected = state_tensors();
  for (const auto& [name, t] : tensors) {
    if (expected.count(name)) continue;
    if (name.rfind("master.", 0) == 0)
      fail(source, ": has master weight '", name,
           "' but this optimiser keeps none (the checkpoint was written by a bf16/fp16 run with master weights; "
           "load the model in that dtype)");
    fail(source, ": unexpected optimizer tensor '", name, "' (the checkpoint belongs to a different model)");
  }
  for (const auto& [name, dst] : expected) {
    auto it = tensors.find(name);
    if (it == tensors.end() && name.rfind("master.", 0) == 0)
      fail(source, ": missing master weight '", name,
           "' (the checkpoint was written by a run without fp32 master weights; load the model in that dtype)");
    check(it != tensors.end(), source, ": missing optimizer tensor '", name, "'");
    const torch::Tensor& src = it->second;
    check(src.sizes() == dst.sizes(), source, ": optimizer tensor '", name, "' has shape ", src.sizes(),
          " but the model expects ", dst.sizes());
    check(src.scalar_type() == dst.scalar_type(), source, ": optimizer tensor '", name, "' has dtype ",
          c10::toString(src.scalar_type()), " but the optimiser keeps ", c10::toString(dst.scalar_type()));
  }
  for (auto& [name, dst] : expected) dst.copy_(tensors.at(name));
  for (auto& s : states_) {
    if (s.master.defined()) s.param.copy_(s.master);
  }
  step_ = step;
  n_skipped_ = n_skipped;
}

}  // namespace rlf

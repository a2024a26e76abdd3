#include "train/ema_weights.h"

#include <cmath>

#include "model/loader.h"
#include "util/error.h"

namespace rlf {

EmaWeights::EmaWeights(CausalLMImpl& from, double decay) : decay_(decay) {
  check(std::isfinite(decay) && decay > 0 && decay < 1, "EMA weights: the decay must be in (0, 1) (got ", decay, ")");
  torch::NoGradGuard no_grad;
  model_ = make_random_model(from.config(), 0, torch::kFloat32, from.device());
  auto src = from.named_parameters();
  for (auto& p : model_->named_parameters()) {
    const torch::Tensor* s = src.find(p.key());
    check(s != nullptr, "EMA weights: the model has no parameter '", p.key(), "'");
    p.value().copy_(*s);
    p.value().set_requires_grad(false);
  }
  model_->set_fast_cpu_path(from.fast_cpu_path());
  model_->set_memory_levers(from.memory_levers());
  model_->eval();
}

void EmaWeights::update(CausalLMImpl& from) {
  torch::NoGradGuard no_grad;
  auto src = from.named_parameters();
  for (auto& p : model_->named_parameters()) {
    const torch::Tensor* s = src.find(p.key());
    check(s != nullptr && s->sizes() == p.value().sizes(), "EMA weights: the model's parameter '", p.key(),
          "' is missing or has another shape than the average's");
    p.value().mul_(decay_).add_(s->to(torch::kFloat32), 1.0 - decay_);
  }
  ++n_updates_;
}

}  // namespace rlf

#include "train/value_model.h"

#include <cmath>

#include "rm/reward_model.h"
#include "train/micro_batch.h"
#include "util/error.h"
#include "util/seed.h"

namespace rlf {

void ValueOptions::validate() const {
  check(std::isfinite(lr) && lr > 0, "value.lr must be > 0 (got ", lr, ")");
  check(std::isfinite(clip) && clip >= 0, "value.clip must be >= 0 (got ", clip, "; 0 = no clipping)");
  check(std::isfinite(coef) && coef > 0, "value.coef must be > 0 (got ", coef, ")");
  check(!shared || model.empty(), "value.model starts a separate critic; with value.shared = true the value head sits "
        "on the policy's trunk: drop one of them");
}

CausalLM critic_from_policy(CausalLMImpl& base) {
  CausalLM critic = make_reward_model(base, 1, /*seed=*/0);
  torch::NoGradGuard ng;
  for (auto& p : critic->named_parameters())
    if (p.key() == "score.weight") p.value().zero_();
  return critic;
}

ValueModel::ValueModel(CausalLM critic, ValueOptions options, TrainerOptions trainer, Reducer& reducer)
    : critic_(std::move(critic)), options_(std::move(options)), reducer_(reducer), micro_batch_size_(trainer.micro_batch_size) {
  options_.validate();
  check(critic_ && critic_->config().is_classifier(), "the value model must be a classifier with a score head (value.model)");
  trainer.log_entropy = false;
  trainer.log_rollout_agreement = false;
  // [optim]'s schedule, scaled to the critic's peak rate.
  if (trainer.lr.lr > 0) trainer.lr.lr_min *= options_.lr / trainer.lr.lr;
  trainer.lr.lr = options_.lr;
  trainer.seed = derive_seed(trainer.seed, SeedStream::ValueTrainer);
  std::vector<std::unique_ptr<LossTerm>> terms;
  terms.push_back(std::make_unique<ValueTerm>(options_.clip));
  trainer_ = std::make_unique<Trainer>(critic_, std::move(terms), trainer, reducer_);
}

ValueModel::ValueModel(CausalLM policy, ValueOptions options, int64_t micro_batch_size, Reducer& reducer)
    : critic_(std::move(policy)), options_(std::move(options)), reducer_(reducer), micro_batch_size_(micro_batch_size) {
  options_.validate();
  check(options_.shared, "ValueModel: this constructor is for value.shared");
  check(critic_ && critic_->has_value_head(), "value.shared: the policy has no value head (add_value_head)");
}

void ValueModel::score(const std::vector<Episode*>& episodes) {
  std::vector<const Episode*> view;
  std::vector<Episode*> scored;
  for (Episode* e : episodes) {
    if (e->tokens.size() < 2) continue;
    view.push_back(e);
    scored.push_back(e);
  }
  auto values = recompute_values(*critic_, view, micro_batch_size_);
  for (size_t i = 0; i < scored.size(); ++i) scored[i]->value = std::move(values[i]);
}

Json ValueModel::update(const std::vector<Episode>& episodes, int64_t step_index) {
  // Explained variance of the values the advantages were computed with.
  struct {
    double n = 0, r = 0, rr = 0, d = 0, dd = 0;  // n, sum R, sum R^2, sum (R - V), sum (R - V)^2
  } s;
  for (const Episode& e : episodes) {
    if (e.value_target.empty()) continue;
    for (size_t t = 0; t < e.tokens.size(); ++t) {
      if (e.loss_weight[t] <= 0 || !std::isfinite(e.value_target[t])) continue;
      const double r = e.value_target[t], d = r - e.value[t];
      s.n += 1, s.r += r, s.rr += r * r, s.d += d, s.dd += d * d;
    }
  }
  reducer_.sum_fields(s);
  Json m;
  if (trainer_) {
    Json u = trainer_->update(episodes, step_index);
    for (const auto& [k, v] : u.items())
      if (k.rfind("value/", 0) == 0 || k == "loss/value") m[k] = v;
    m["value/grad_norm"] = u.value("optim/grad_norm", 0.0);
    m["value/lr"] = u.value("optim/lr", 0.0);
  }
  if (s.n >= 2) {
    const double var_r = (s.rr - s.r * s.r / s.n) / (s.n - 1);
    const double var_d = (s.dd - s.d * s.d / s.n) / (s.n - 1);
    if (var_r > 0) m["value/explained_variance"] = 1.0 - var_d / var_r;
  }
  return m;
}

}  // namespace rlf

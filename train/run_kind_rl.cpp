// The RL kind of run (trainer.kind = "grpo": GRPO, PPO, RAFT, NFT, online
// DPO, distillation): episodes through the environment (train/rl_steps.h),
// a loss of the policy term and its companions (rl_terms below), PPO's
// critic, asynchronous rollouts, and the state a checkpoint keeps beyond the
// data cursor (replay buffer, lesson pool, adaptive KL, Lagrange multipliers,
// prompt pool).
#include <algorithm>
#include <cmath>

#include "feedback/critic_config.h"
#include "model/loader.h"
#include "rm/reward_model.h"
#include "train/diagnostics.h"
#include "train/ema_weights.h"
#include "train/loss_terms.h"
#include "train/rejection_sampling.h"
#include "train/rl_steps.h"
#include "train/run_kind.h"
#include "train/topk_distill_term.h"
#include "util/error.h"

namespace rlf {

namespace {

std::vector<std::unique_ptr<LossTerm>> rl_terms(const TrainConfig& cfg) {
  std::vector<std::unique_ptr<LossTerm>> terms;
  if (cfg.preference.online)  // online DPO: pairs of each rollout group's best and worst episode
    terms.push_back(std::make_unique<PreferenceTerm>(cfg.preference.loss));
  else if (cfg.rl.raft.enabled || cfg.rl.fcp.enabled)  // the ce term: on the episodes rejection sampling keeps
    terms.push_back(std::make_unique<CrossEntropyTerm>());  // (next() filters them), or on every episode under its feedback
  else if (cfg.loss.nft)  // negative-aware fine-tuning: correct and incorrect samples by their group's correct rate
    terms.push_back(std::make_unique<NftTerm>(cfg.loss.nft_options, cfg.loss.aggregation));
  else
    terms.push_back(std::make_unique<PolicyGradientTerm>(
        cfg.loss.policy, cfg.loss.aggregation,
        algo::OffPolicyLossOptions{cfg.rl.refine.objective, cfg.rl.refine.gamma}, cfg.loss.correction));
  if (cfg.rl.kl_beta > 0 && !cfg.rl.kl_in_reward)
    terms.push_back(std::make_unique<KlTerm>(cfg.rl.kl_beta, cfg.rl.kl_estimator, cfg.loss.aggregation));
  if (cfg.loss.entropy_coef != 0) terms.push_back(std::make_unique<EntropyTerm>(cfg.loss.entropy_coef, cfg.loss.aggregation));
  if (cfg.rl.distill.enabled && cfg.rl.distill.top_k > 0)
    terms.push_back(std::make_unique<TopKDistillTerm>(cfg.rl.distill.coef, cfg.rl.distill.divergence,
                                                      cfg.rl.distill.beta, cfg.loss.aggregation));
  else if (cfg.rl.distill.enabled)
    terms.push_back(std::make_unique<DistillTerm>(cfg.rl.distill.coef, cfg.rl.distill.estimator, cfg.loss.aggregation));
  // PPO with a value head on the policy's trunk: the value term is the policy's own.
  if (cfg.value.enabled && cfg.value.shared)
    terms.push_back(std::make_unique<ValueTerm>(cfg.value.clip, 0, cfg.value.coef));
  return terms;
}

// The samples.jsonl records of a step's groups.
std::vector<SampleRecord> rl_sample_records(const std::vector<ScoredGroup>& groups) {
  std::vector<SampleRecord> out;
  for (const ScoredGroup& g : groups) {
    for (size_t i = 0; i < g.group.episodes.size(); ++i) {
      const Episode& e = g.group.episodes[i];
      SampleRecord r;
      r.prompt = g.group.prompt;
      r.completion = e.transcript();
      r.reward = g.totals[i] ? *g.totals[i] : std::nan("");
      for (size_t c = 0; c < g.scores.names.size(); ++c)
        if (g.scores.results[c][i].score) r.rewards[g.scores.names[c]] = *g.scores.results[c][i].score;
      double adv = 0;
      for (size_t t = 0; t < e.advantage.size(); ++t)
        if (e.loss_weight[t] > 0) adv = e.advantage[t];  // the last policy token's
      r.advantage = adv;
      r.extra = {{"id", g.group.task->id}, {"explanation", g.scores.describe(i)}, {"turns", e.n_turns},
                 {"end_reason", e.end_reason}};
      if (e.source != EpisodeSource::Rollout) {
        r.extra["source"] = episode_source_name(e.source);
        if (!e.turn_feedback.empty()) r.extra["critique"] = e.turn_feedback[0];
      }
      if (!e.env_error.empty()) r.extra["env_error"] = e.env_error;
      out.push_back(std::move(r));
    }
  }
  return out;
}

class RlKind final : public RunKind {
 public:
  explicit RlKind(const TrainConfig& cfg) : cfg_(cfg) {}
  const char* name() const override { return "grpo"; }

  void check_world(int64_t world) const override {
    check(cfg_.rl.prompts_per_step >= world, cfg_.source, ": rollout.prompts_per_step = ", cfg_.rl.prompts_per_step,
          " is smaller than WORLD_SIZE = ", world, ": every rank needs at least one prompt per step");
  }

  void load_models(RunContext& r) override {
    // The critic starts (and an endpoint is probed) before anything long runs.
    if (cfg_.asks_critic())
      critic_ = make_critic(cfg_.rl.critic, r.policy, r.opts.read_env, cfg_.source + " [critic]");
    // A held-out gold reward watched against the trained one (the watch restarts empty after a resume).
    if (cfg_.rl.gold_reward.empty()) return;
    const RewardComponent& gold =
        r.rewards.components()[r.rewards.index_of(cfg_.rl.gold_reward, cfg_.source + ": algorithm.gold_reward")];
    check(gold.weight == 0, cfg_.source, ": algorithm.gold_reward = \"", cfg_.rl.gold_reward, "\" has weight ", gold.weight,
          ", so it is trained on; a gold reward must be held out: set its weight = 0");
    gold_watch_ = std::make_unique<GoldRewardWatch>(cfg_.rl.gold_reward);
  }

  void load_companions(RunContext& r) override {
    // A critic from value.model loads (and is checked) before anything long runs.
    if (!cfg_.value.enabled || cfg_.value.model.empty()) return;
    LoadOptions lo;
    lo.dtype = cfg_.model.dtype;
    lo.device = cfg_.model.device;
    loaded_critic_ = with_context("value.model", [&] { return load_reward_model(cfg_.value.model, lo).model; });
    check(loaded_critic_->config().vocab_size == r.policy.model()->config().vocab_size, "value.model '",
          cfg_.value.model, "' has a vocabulary of ", loaded_critic_->config().vocab_size, " tokens but the policy's has ",
          r.policy.model()->config().vocab_size, ": the critic reads the policy's token ids, so it needs the same "
          "tokenizer (train it from the policy: trainer.kind = \"rm\")");
  }

  void prepare(RunContext& r) override { attach_lora_to_lm(r); }
  bool needs_reference() const override {
    return cfg_.rl.kl_beta > 0 || (cfg_.preference.online && !cfg_.preference.loss.reference_free()) ||
           (cfg_.rl.distill.enabled && cfg_.rl.distill.teacher == DistillTeacherKind::Frozen);
  }

  void start(RunContext& r, CausalLM reference, bool warmed, bool) override {
    make_value_model(r, warmed);
    trainer_ = std::make_unique<Trainer>(r.policy.model(), rl_terms(cfg_), cfg_.trainer, r.reducer);
    if (cfg_.rl.max_staleness > 0) {
      // Asynchronous rollouts sample with a copy of the weights (train/rollout_pipeline.h).
      check(r.reducer.world_size() == 1, cfg_.source, ": rollout.max_staleness > 0 (asynchronous rollouts) runs in one "
            "process; it is not supported with WORLD_SIZE = ", r.reducer.world_size(), " yet");
      rollout_policy_ = std::make_unique<Policy>(r.policy);
      rollout_policy_->loaded.model = frozen_copy(*r.policy.model());
    }
    train_ = &r.train;
    // A frozen distill teacher alone (kl_beta = 0) needs the reference model, not its log-probs: no forward for them.
    RlStepOptions steps = cfg_.rl;
    steps.reference_logprobs = trainer_->needs_reference() || (cfg_.rl.kl_in_reward && cfg_.rl.kl_beta > 0);
    // distill.teacher = "ema": the average starts at the policy as RL starts (after the warm start; a resume
    // restores it from the checkpoint) and follows every optimiser step the trainer applies.
    if (cfg_.rl.distill.enabled && cfg_.rl.distill.teacher == DistillTeacherKind::Ema) {
      ema_ = std::make_unique<EmaWeights>(*r.policy.model(), cfg_.rl.distill.ema_decay);
      trainer_->set_after_step([this, model = r.policy.model().ptr()] { ema_->update(*model); });
    }
    steps_ = std::make_unique<RlSteps>(rollout_policy_ ? *rollout_policy_ : r.policy, r.train, r.rewards, *r.env,
                                       steps, r.reducer, std::move(reference), critic_.get(), value_.get(),
                                       ema_ ? ema_->model() : CausalLM{nullptr});
  }
  std::map<std::string, CausalLM> checkpoint_models() override {
    if (!ema_) return {};
    return {{"ema", ema_->model()}};
  }
  Trainer& trainer() override { return *trainer_; }
  ValueModel* value() override { return value_.get(); }
  CausalLM rollout_model() override { return rollout_policy_ ? rollout_policy_->model() : CausalLM{nullptr}; }

  std::vector<Episode> next(int64_t step, int32_t version, Json& m) override {
    auto eps = steps_->next(step, version, m);
    return cfg_.rl.raft.enabled ? rejection_sample(eps, cfg_.rl.raft, m) : eps;
  }
  DataCursor& cursor() override { return steps_->cursor(); }
  std::vector<SampleRecord> samples() const override { return rl_sample_records(steps_->last_groups()); }
  Json extra_state() const override;
  void restore_extra_state(const Json& state) override;
  std::vector<std::pair<std::string, Json>> reports(int64_t step) const override {
    if (const PromptPool* pool = steps_->pool()) return {{"prompt_pool.json", pool->report(step)}};
    return {};
  }
  std::optional<int64_t> generated_tokens(const Json& m) const override {
    return static_cast<int64_t>(m.value("rollout/generated_tokens", 0.0) + m.value("refine/generated_tokens", 0.0) +
                                m.value("lessons/generated_tokens", 0.0) + m.value("distill/generated_tokens", 0.0) +
                                m.value("fcp/generated_tokens", 0.0));
  }
  void observe(int64_t step, Json& m) override {
    if (!gold_watch_ || !m.contains("reward/mean") || !m.contains("reward/" + cfg_.rl.gold_reward + "/mean")) return;
    const double gold = m["reward/" + cfg_.rl.gold_reward + "/mean"].get<double>();
    m["diag/gold_reward"] = gold;
    if (auto warning = gold_watch_->add(step, m["reward/mean"].get<double>(), gold)) {
      m["notes"].push_back(*warning);
      m["diag/overoptimization_warning"] = 1.0;
    }
  }
  bool counts_failed_steps() const override { return true; }

  std::vector<std::pair<std::string, double>> progress(const Json& m) const override {
    return {{"reward", m.value("reward/mean", 0.0)}, {"acc", m.value("accuracy", 0.0)}};
  }
  std::vector<std::string> table_keys() const override {
    return {"reward/mean", "accuracy", "episode/turns_mean", "completion/length_mean", "policy/entropy", "time/step_s"};
  }

 private:
  // PPO's critic: the policy as RL starts with a zero value head, or the classifier from value.model.
  void make_value_model(RunContext& r, bool warmed) {
    if (!cfg_.value.enabled) return;
    if (cfg_.value.shared) {
      r.policy.model()->add_value_head();
      value_ = std::make_unique<ValueModel>(r.policy.model(), cfg_.value, cfg_.trainer.micro_batch_size, r.reducer);
      r.say("value model: a zero value head on the " + std::string(warmed ? "warmed " : "") +
            "policy's trunk (value.shared)");
      return;
    }
    CausalLM critic = loaded_critic_ ? loaded_critic_ : critic_from_policy(*r.policy.model());
    critic->set_fast_cpu_path(cfg_.model.fast_cpu_path);
    critic->set_memory_levers(memory_levers_here(cfg_.memory));
    value_ = std::make_unique<ValueModel>(critic, cfg_.value, cfg_.trainer, r.reducer);
    r.say("value model: " + (cfg_.value.model.empty() ? std::string(warmed ? "the warmed policy" : "the policy") +
                                                            " with a zero value head"
                                                      : cfg_.value.model));
  }

  const TrainConfig& cfg_;
  std::unique_ptr<Critic> critic_;  // refine.enabled or lessons.enabled
  std::unique_ptr<GoldRewardWatch> gold_watch_;
  CausalLM loaded_critic_{nullptr};  // value.model
  std::unique_ptr<ValueModel> value_;
  std::unique_ptr<Trainer> trainer_;
  std::unique_ptr<EmaWeights> ema_;  // distill.teacher = "ema": the average the teacher reads
  std::unique_ptr<Policy> rollout_policy_;  // asynchronous rollouts: the copy the rollouts sample with
  const std::vector<PromptExample>* train_ = nullptr;
  std::unique_ptr<RlSteps> steps_;
};

Json RlKind::extra_state() const {
  Json s = Json::object();
  if (const ReplayBuffer* rb = steps_->replay()) s["replay"] = rb->to_json();
  if (const LessonStage* ls = steps_->lessons()) s["lessons"] = ls->pool().to_json();
  if (steps_->kl_controller().adaptive()) s["kl_beta"] = steps_->kl_controller().beta();
  if (steps_->rewards().has_constraints()) s["constraints"] = steps_->rewards().constraint_state();
  if (const PromptPool* pool = steps_->pool()) s["prompt_pool"] = pool->state();
  return s.empty() ? Json(nullptr) : s;
}

void RlKind::restore_extra_state(const Json& state) {
  if (steps_->kl_controller().adaptive()) {
    check(state.is_object() && state.contains("kl_beta"), "the checkpoint has no adaptive KL coefficient, but "
          "algorithm.kl_target is set: a run with a fixed kl_beta cannot be resumed with an adaptive one");
    steps_->kl_controller().set_beta(state.at("kl_beta").get<double>());
  }
  if (steps_->rewards().has_constraints()) {
    check(state.is_object() && state.contains("constraints"), "the checkpoint has no Lagrange multipliers, but a "
          "[[reward]] sets constraint_max: a run without constraints cannot be resumed with them");
    steps_->rewards().restore_constraints(state.at("constraints"), "checkpoint");
  }
  if (PromptPool* pool = steps_->pool()) {
    check(state.is_object() && state.contains("prompt_pool"), "the checkpoint has no prompt pool, but "
          "curation.difficulty_pool or curation.reward_disagreement is set: a run that did not curate its prompts "
          "cannot be resumed with curation");
    pool->restore(state.at("prompt_pool"), "checkpoint prompt pool");
  }
  std::map<std::string, std::string> prompts;
  for (const PromptExample& e : *train_) prompts[e.id] = e.prompt;
  if (ReplayBuffer* rb = steps_->replay()) {
    check(state.is_object() && state.contains("replay"), "the checkpoint has no replay buffer, but replay.enabled is "
          "set: a run that did not replay cannot be resumed with replay");
    rb->restore(state.at("replay"), prompts, "checkpoint replay buffer");
  }
  if (LessonStage* ls = steps_->lessons()) {
    check(state.is_object() && state.contains("lessons"), "the checkpoint has no lesson pool, but lessons.enabled is "
          "set: a run without lessons cannot be resumed with them");
    ls->pool().restore(state.at("lessons"), prompts, "checkpoint lesson pool");
  }
}

}  // namespace

std::unique_ptr<RunKind> make_rl_kind(const TrainConfig& cfg) { return std::make_unique<RlKind>(cfg); }

}  // namespace rlf

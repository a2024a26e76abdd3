#include "train/train_run.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <set>

#include "data/decontamination.h"
#include "data/prompt_format.h"
#include "env/env_registry.h"
#include "eval/evaluator.h"
#include "model/lora.h"
#include "model/loader.h"
#include "rewards/env_reward.h"
#include "rewards/judge_reward.h"
#include "rewards/registry.h"
#include "rm/model_reward.h"
#include "rm/process_reward.h"
#include "rm/reward_model.h"
#include "rm/self_certainty_reward.h"
#include "rollout/policy.h"
#include "train/checkpoint.h"
#include "train/demo.h"
#include "train/diagnostics.h"
#include "train/failed_steps.h"
#include "train/metrics.h"
#include "train/plot.h"
#include "train/preference_steps.h"
#include "train/process_steps.h"
#include "train/progress.h"
#include "train/run_preflight.h"
#include "train/rl_steps.h"
#include "train/rollout_pipeline.h"
#include "train/sft_steps.h"
#include "train/heldout_kl.h"
#include "train/topk_distill_term.h"
#include "train/trainer.h"
#include "util/clock.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/hash.h"
#include "util/write_target.h"

namespace rlf {

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// Everything the phases of a run share.
struct Run {
  const TrainConfig& cfg;
  const TrainRunOptions& opts;
  Reducer& reducer;  // LocalReducer in one process
  Policy policy;
  std::unique_ptr<PromptDataset> data;
  std::vector<PromptExample> train, eval;  // after the prompt-length check
  RewardSet rewards;
  std::unique_ptr<Environment> env;
  std::unique_ptr<Critic> critic;  // refine.enabled
  std::vector<SftExample> sft_examples;
  std::unique_ptr<PreferenceDataset> prefs;  // trainer.kind = "dpo" or "rm"
  std::vector<PreferenceExample> pref_train;  // its training pairs outside the held-out eval prompts
  std::vector<PreferenceExample> pref_eval;   // its held-out pairs (that fit the context)
  std::unique_ptr<StepDataset> steps;         // trainer.kind = "rm" with [process.data]
  std::vector<StepExample> step_train, step_eval;  // its solutions that fit the context

  void say(const std::string& s) const {
    if (!opts.quiet) std::cout << s << std::endl;
  }

  // Greedy pass@1 on `examples` through the run's environment; -1 without examples.
  double greedy_pass1(const std::vector<PromptExample>& examples) {
    if (examples.empty() || rewards.empty()) return -1;
    EvalOptions o;
    o.n_samples = 1;
    o.temperature = 0.0;
    o.max_new_tokens = cfg.rl.sampling.max_new_tokens;
    o.stop = cfg.rl.sampling.stop_strings;
    o.accuracy_reward = cfg.rl.accuracy_reward;
    o.add_special_tokens = cfg.rl.add_special_tokens;
    o.max_batch_rows = cfg.rl.max_batch_rows;
    return evaluate(policy, examples, rewards, o, nullptr, EvalEnvironment{env.get(), cfg.rl.env.episode}).pass_at_k.at(1);
  }

  // run.eval_kl_model: held-out KL(policy || that model) (train/heldout_kl.h); -1 when off or no eval split.
  double kl_to_model(const std::vector<PromptExample>& examples) {
    if (cfg.run.eval_kl_model.empty() || examples.empty() || rewards.empty()) return -1;
    LoadOptions lo;
    lo.device = policy.model()->device().str();
    Policy other = with_context("run.eval_kl_model", [&] { return load_policy(cfg.run.eval_kl_model, "", lo); });
    check(other.loaded.config.vocab_size == policy.loaded.config.vocab_size, "run.eval_kl_model: its vocabulary (",
          other.loaded.config.vocab_size, " tokens) differs from the policy's (", policy.loaded.config.vocab_size, ")");
    other.model()->eval();
    HeldoutKlOptions o;
    o.max_new_tokens = cfg.rl.sampling.max_new_tokens;
    o.max_batch_rows = cfg.rl.max_batch_rows;
    o.micro_batch_size = cfg.trainer.micro_batch_size;
    o.add_special_tokens = cfg.rl.add_special_tokens;
    o.accuracy_reward = cfg.rl.accuracy_reward;
    const double kl = heldout_kl(policy, *other.model(), examples, rewards, o);
    say("held-out KL(policy || " + cfg.run.eval_kl_model + "): " + std::to_string(kl));
    return kl;
  }
};

// Writes a decontamination report to run.out_dir/curation/<name> (the writing rank) and logs its summary.
void write_decontamination_report(const Run& r, const DecontaminationResult& dc, const std::string& name) {
  const fs::path path = r.cfg.run.out_dir / "curation" / name;
  if (r.reducer.writes()) {
    ensure_directory(path.parent_path());
    write_file_atomic(path, dc.report.dump(2));
  }
  r.say(dc.summary() + "; report: " + path.string());
}

// Prompts that cannot fit the context with the configured turn length are bad
// records: an error naming the record, or (on_bad_record = "skip") dropped and counted.
std::vector<PromptExample> fitting_prompts(const std::vector<PromptExample>& in, Run& r, int64_t* n_dropped) {
  const TrainConfig& cfg = r.cfg;
  const int64_t limit = r.policy.model()->config().max_position_embeddings;
  const int64_t need = cfg.rl.sampling.max_new_tokens;
  std::vector<PromptExample> out;
  for (const PromptExample& ex : in) {
    const int64_t n = static_cast<int64_t>(r.policy.tokenizer->encode(ex.prompt, cfg.rl.add_special_tokens).size());
    if (n + need <= limit) {
      out.push_back(ex);
      continue;
    }
    check(cfg.data.on_bad_record == "skip", ex.where, ": the prompt has ", n, " tokens; with rollout.max_new_tokens = ",
          need, " it does not fit the model's context of ", limit,
          " tokens (shorten it, lower rollout.max_new_tokens, or set data.on_bad_record = \"skip\")");
    ++*n_dropped;
  }
  return out;
}

// Preference pairs whose prompt + response + EOS exceeds the context are bad
// records: an error naming the record, or (preference.data.on_bad_record =
// "skip") dropped and counted.
std::vector<PreferenceExample> fitting_pairs(const std::vector<PreferenceExample>& in, Run& r, int64_t* n_dropped) {
  const int64_t limit = r.policy.model()->config().max_position_embeddings;
  std::vector<PreferenceExample> out;
  for (const PreferenceExample& p : in) {
    const int64_t prompt = static_cast<int64_t>(r.policy.tokenizer->encode(p.prompt, r.cfg.rl.add_special_tokens).size());
    const int64_t longest = std::max(r.policy.tokenizer->encode(p.chosen, false).size(),
                                     r.policy.tokenizer->encode(p.rejected, false).size());
    if (prompt + longest + 1 <= limit) {
      out.push_back(p);
      continue;
    }
    check(r.cfg.preference.data.on_bad_record == "skip", p.where, ": the prompt (", prompt,
          " tokens) and its longer response (", longest, " tokens) do not fit the model's context of ", limit,
          " tokens (shorten them, or set preference.data.on_bad_record = \"skip\")");
    ++*n_dropped;
  }
  return out;
}

// A frozen copy of `m` (same config, dtype, device, weights).
CausalLM frozen_copy(CausalLMImpl& m) {
  CausalLM c = make_random_model(m.config(), 0, m.dtype(), m.device());
  torch::NoGradGuard ng;
  auto src = m.named_parameters();
  for (auto& p : c->named_parameters()) {
    p.value().copy_(src[p.key()]);
    p.value().set_requires_grad(false);
  }
  c->set_fast_cpu_path(m.fast_cpu_path());
  return c;
}

CausalLM frozen_load(const fs::path& path, const TrainConfig& cfg) {
  LoadOptions lo;
  lo.dtype = cfg.model.dtype;
  lo.device = cfg.model.device;
  CausalLM m = load_model(path, lo).model;
  m->set_fast_cpu_path(cfg.model.fast_cpu_path);
  for (auto& p : m->parameters()) p.set_requires_grad(false);
  return m;
}

std::map<std::string, double> numeric(const Json& m) {
  std::map<std::string, double> out;
  for (auto& [k, v] : m.items())
    if (v.is_number() && k != "step") out[k] = v.get<double>();  // the writer owns "step"
  return out;
}

// Where a kind of run gets its episodes.
class StepSource {
 public:
  virtual ~StepSource() = default;
  virtual std::vector<Episode> next(int64_t step, int32_t version, Json& metrics) = 0;
  virtual DataCursor& cursor() = 0;
  virtual std::vector<SampleRecord> samples() const { return {}; }
  // State beyond the data cursor that a checkpoint keeps (the replay buffer), or null.
  virtual Json extra_state() const { return nullptr; }
  virtual void restore_extra_state(const Json&) {}
  // Reports written to run.out_dir/curation/<name> with each checkpoint ([curation]'s prompt pool).
  virtual std::vector<std::pair<std::string, Json>> reports(int64_t) const { return {}; }
};

class RlSource final : public StepSource {
 public:
  // `policy`: the one the rollouts sample with (r.policy, or the rollout copy of asynchronous rollouts).
  RlSource(Run& r, Policy& policy, CausalLM reference, ValueModel* value)
      : steps_(policy, r.train, r.rewards, *r.env, r.cfg.rl, r.reducer, std::move(reference), r.critic.get(), value),
        train_(r.train),
        raft_(r.cfg.rl.raft) {}
  std::vector<Episode> next(int64_t step, int32_t version, Json& m) override {
    auto eps = steps_.next(step, version, m);
    return raft_.enabled ? rejection_sample(eps, raft_, m) : eps;
  }
  DataCursor& cursor() override { return steps_.cursor(); }
  Json extra_state() const override {
    Json s = Json::object();
    if (const ReplayBuffer* rb = steps_.replay()) s["replay"] = rb->to_json();
    if (const LessonStage* ls = steps_.lessons()) s["lessons"] = ls->pool().to_json();
    if (steps_.kl_controller().adaptive()) s["kl_beta"] = steps_.kl_controller().beta();
    if (steps_.rewards().has_constraints()) s["constraints"] = steps_.rewards().constraint_state();
    if (const PromptPool* pool = steps_.pool()) s["prompt_pool"] = pool->state();
    return s.empty() ? Json(nullptr) : s;
  }
  std::vector<std::pair<std::string, Json>> reports(int64_t step) const override {
    if (const PromptPool* pool = steps_.pool()) return {{"prompt_pool.json", pool->report(step)}};
    return {};
  }
  void restore_extra_state(const Json& state) override {
    if (steps_.kl_controller().adaptive()) {
      check(state.is_object() && state.contains("kl_beta"), "the checkpoint has no adaptive KL coefficient, but "
            "algorithm.kl_target is set: a run with a fixed kl_beta cannot be resumed with an adaptive one");
      steps_.kl_controller().set_beta(state.at("kl_beta").get<double>());
    }
    if (steps_.rewards().has_constraints()) {
      check(state.is_object() && state.contains("constraints"), "the checkpoint has no Lagrange multipliers, but a "
            "[[reward]] sets constraint_max: a run without constraints cannot be resumed with them");
      steps_.rewards().restore_constraints(state.at("constraints"), "checkpoint");
    }
    if (PromptPool* pool = steps_.pool()) {
      check(state.is_object() && state.contains("prompt_pool"), "the checkpoint has no prompt pool, but "
            "curation.difficulty_pool or curation.reward_disagreement is set: a run that did not curate its prompts "
            "cannot be resumed with curation");
      pool->restore(state.at("prompt_pool"), "checkpoint prompt pool");
    }
    std::map<std::string, std::string> prompts;
    for (const PromptExample& e : train_) prompts[e.id] = e.prompt;
    if (ReplayBuffer* rb = steps_.replay()) {
      check(state.is_object() && state.contains("replay"), "the checkpoint has no replay buffer, but replay.enabled is "
            "set: a run that did not replay cannot be resumed with replay");
      rb->restore(state.at("replay"), prompts, "checkpoint replay buffer");
    }
    if (LessonStage* ls = steps_.lessons()) {
      check(state.is_object() && state.contains("lessons"), "the checkpoint has no lesson pool, but lessons.enabled is "
            "set: a run without lessons cannot be resumed with them");
      ls->pool().restore(state.at("lessons"), prompts, "checkpoint lesson pool");
    }
  }
  std::vector<SampleRecord> samples() const override {
    std::vector<SampleRecord> out;
    for (const ScoredGroup& g : steps_.last_groups()) {
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

 private:
  RlSteps steps_;
  const std::vector<PromptExample>& train_;
  RaftOptions raft_;
};

class SftSource final : public StepSource {
 public:
  // `reference` (optional): the KL reference whose log-probs the episodes carry (SFT runs with a kl term).
  SftSource(Run& r, int64_t batch_size, uint64_t seed, bool one_group, CausalLM reference = nullptr,
            int64_t micro_batch_size = 8)
      : steps_(r.policy, r.sft_examples, batch_size, seed, r.cfg.rl.add_special_tokens, one_group, shard_of(r.reducer)),
        reducer_(r.reducer),
        reference_(std::move(reference)),
        micro_batch_size_(micro_batch_size) {}
  std::vector<Episode> next(int64_t, int32_t, Json& m) override {
    auto eps = steps_.next();
    double n = 0;
    for (const auto& e : eps) n += static_cast<double>(e.n_policy_tokens());
    reducer_.sum(std::span<double>(&n, 1));
    m["sft/tokens"] = n;
    if (reference_) {
      std::vector<const Episode*> view;
      for (const auto& e : eps) view.push_back(&e);
      auto ref = recompute_logprobs(*reference_, view, micro_batch_size_, LogprobScope::FromFirstWeighted);
      for (size_t i = 0; i < eps.size(); ++i) eps[i].ref_logprob = std::move(ref[i]);
    }
    return eps;
  }
  DataCursor& cursor() override { return steps_.cursor(); }

 private:
  SftSteps steps_;
  Reducer& reducer_;
  CausalLM reference_;
  int64_t micro_batch_size_;
};

class PreferenceSource final : public StepSource {
 public:
  PreferenceSource(Run& r, CausalLM reference)
      : steps_(r.policy, r.pref_train, r.cfg.preference.batch_size, r.cfg.rl.seed ^ 0xD70ULL,
               r.cfg.rl.add_special_tokens, std::move(reference), r.cfg.trainer.micro_batch_size,
               r.cfg.kind == TrainerKind::Rm ? r.cfg.reward_model.attributes : std::vector<std::string>{}),
        reducer_(r.reducer) {
    steps_.set_shard(shard_of(r.reducer));
    if (steps_.reference_s() > 0)
      r.say("preference: reference log-probs of " + std::to_string(r.pref_train.size()) + " training pairs in " +
            std::to_string(steps_.reference_s()) + " s");
  }
  std::vector<Episode> next(int64_t, int32_t, Json& m) override {
    auto eps = steps_.next();
    double pairs = static_cast<double>(eps.size() / 2);
    reducer_.sum(std::span<double>(&pairs, 1));
    m["pref/pairs"] = pairs;
    return eps;
  }
  DataCursor& cursor() override { return steps_.cursor(); }

 private:
  PreferenceSteps steps_;
  Reducer& reducer_;
};

// ArmoRM's second stage: the gating layer over the prompt's features, fitted
// on the training pairs with the trained backbone and heads frozen.
RewardGating fit_reward_gating(Run& r, const GatingOptions& options, Json* report) {
  const auto t0 = Clock::now();
  CausalLMImpl& model = *r.policy.model();
  std::vector<RewardModelInput> inputs;
  for (const PreferenceExample& p : r.pref_train) {
    inputs.push_back(reward_model_input(*r.policy.tokenizer, p.prompt, p.chosen, r.cfg.rl.add_special_tokens));
    inputs.push_back(reward_model_input(*r.policy.tokenizer, p.prompt, p.rejected, r.cfg.rl.add_special_tokens));
  }
  std::vector<std::vector<int32_t>> seqs;
  std::vector<int64_t> ctx;
  for (const RewardModelInput& in : inputs) seqs.push_back(in.tokens), ctx.push_back(std::max<int64_t>(1, in.prompt_tokens));
  torch::Tensor context;
  const bool was_training = model.is_training();
  model.eval();
  const auto scores = score_sequences(model, seqs, r.cfg.trainer.micro_batch_size, &ctx, &context);
  if (was_training) model.train();
  const auto P = static_cast<int64_t>(r.pref_train.size()), K = model.config().num_labels;
  auto c = torch::empty({P, K}, torch::kFloat32), rej = torch::empty({P, K}, torch::kFloat32);
  for (int64_t i = 0; i < P; ++i)
    for (int64_t k = 0; k < K; ++k)
      c[i][k] = scores[static_cast<size_t>(2 * i)][static_cast<size_t>(k)],
      rej[i][k] = scores[static_cast<size_t>(2 * i + 1)][static_cast<size_t>(k)];
  std::vector<std::string> names;
  for (int64_t k = 0; k < K; ++k) names.push_back(model.config().label_name(k));
  RewardGating g(model.config().hidden_size, names, options);
  // The chosen and rejected responses share the prompt: its features are the chosen row's.
  const auto idx = torch::arange(0, 2 * P, 2, torch::kInt64);
  const GatingFit fit = g.fit(context.index_select(0, idx), c, rej);
  *report = {{"pairs", fit.pairs},           {"loss_before", fit.loss_before},
             {"loss_after", fit.loss_after}, {"accuracy_before", fit.accuracy_before},
             {"accuracy_after", fit.accuracy_after}, {"seconds", seconds_since(t0)}};
  r.say("gating: fitted on " + std::to_string(fit.pairs) + " training pairs: " + report->dump());
  return g;
}

class ProcessSource final : public StepSource {
 public:
  explicit ProcessSource(Run& r)
      : steps_(r.policy, r.step_train, r.cfg.process.batch_size, r.cfg.rl.seed ^ 0x9F3ULL, r.cfg.process.data.delimiter,
               r.cfg.rl.add_special_tokens),
        reducer_(r.reducer) {
    steps_.set_shard(shard_of(r.reducer));
  }
  std::vector<Episode> next(int64_t, int32_t, Json& m) override {
    auto eps = steps_.next();
    double n = static_cast<double>(eps.size());
    reducer_.sum(std::span<double>(&n, 1));
    m["prm/solutions"] = n;
    return eps;
  }
  DataCursor& cursor() override { return steps_.cursor(); }

 private:
  ProcessSteps steps_;
  Reducer& reducer_;
};

// Step-labelled solutions whose prompt + solution + EOS exceed the context
// are bad records, as preference pairs are.
std::vector<StepExample> fitting_solutions(const std::vector<StepExample>& in, Run& r, int64_t* n_dropped) {
  const int64_t limit = r.policy.model()->config().max_position_embeddings;
  std::vector<StepExample> out;
  for (const StepExample& e : in) {
    const int64_t n = static_cast<int64_t>(r.policy.tokenizer->encode(e.prompt, r.cfg.rl.add_special_tokens).size() +
                                           r.policy.tokenizer->encode(e.response(r.cfg.process.data.delimiter)).size());
    if (n + 1 <= limit) {
      out.push_back(e);
      continue;
    }
    check(r.cfg.process.data.on_bad_record == "skip", e.where, ": the prompt and solution (", n,
          " tokens) do not fit the model's context of ", limit,
          " tokens; shorten it, or set process.data.on_bad_record = \"skip\"");
    ++*n_dropped;
  }
  return out;
}

std::vector<std::unique_ptr<LossTerm>> rl_terms(const TrainConfig& cfg) {
  std::vector<std::unique_ptr<LossTerm>> terms;
  if (cfg.preference.online)  // online DPO: pairs of each rollout group's best and worst episode
    terms.push_back(std::make_unique<PreferenceTerm>(cfg.preference.loss));
  else if (cfg.rl.raft.enabled)  // rejection sampling: the ce term on the kept episodes (RlSource filters them)
    terms.push_back(std::make_unique<CrossEntropyTerm>());
  else if (cfg.loss.nft)  // negative-aware fine-tuning: correct and incorrect samples by their group's correct rate
    terms.push_back(std::make_unique<NftTerm>(cfg.loss.nft_options, cfg.loss.aggregation));
  else
    terms.push_back(std::make_unique<PolicyGradientTerm>(cfg.loss.policy, cfg.loss.aggregation, cfg.rl.refine.gamma,
                                                         cfg.loss.correction));
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

std::vector<std::unique_ptr<LossTerm>> sft_terms(const TrainConfig& cfg, bool warm_start) {
  std::vector<std::unique_ptr<LossTerm>> terms;
  terms.push_back(std::make_unique<CrossEntropyTerm>());
  if (!warm_start) {
    // An SFT run may keep the policy near the model as loaded, or its entropy up.
    if (cfg.rl.kl_beta > 0) terms.push_back(std::make_unique<KlTerm>(cfg.rl.kl_beta, cfg.rl.kl_estimator, algo::AggregationOptions{}));
    if (cfg.loss.entropy_coef != 0) terms.push_back(std::make_unique<EntropyTerm>(cfg.loss.entropy_coef, algo::AggregationOptions{}));
  }
  return terms;
}

// The warm start's trainer and data, kept for the SFT control.
struct WarmStart {
  std::unique_ptr<Trainer> trainer;
  std::unique_ptr<SftSource> source;
  int64_t steps = 0;
  std::vector<torch::Tensor> weights;  // the policy right after the warm start
};

WarmStart warm_start(Run& r) {
  const TrainConfig& cfg = r.cfg;
  WarmStart w;
  TrainerOptions to;
  to.micro_batch_size = cfg.sft.micro_batch_size;
  to.seed = cfg.rl.seed;
  to.log_entropy = false;
  to.log_rollout_agreement = false;
  to.optimizer = cfg.trainer.optimizer;
  to.lr.kind = LrScheduleKind::Constant;
  to.lr.lr = cfg.sft.lr;
  w.trainer = std::make_unique<Trainer>(r.policy.model(), sft_terms(cfg, true), to, r.reducer);
  w.source = std::make_unique<SftSource>(r, cfg.sft.batch_size, cfg.rl.seed ^ 0x5F7ULL, /*one_group=*/true);
  ProgressOptions po;
  po.total_steps = cfg.sft.steps;
  po.plain_every = std::max<int64_t>(1, cfg.sft.steps / 20);  // logs (no TTY): ~20 lines
  po.label = "sft";
  po.force_plain = r.opts.quiet;
  std::unique_ptr<ProgressBar> bar;
  if (!r.opts.quiet) bar = std::make_unique<ProgressBar>(po);
  // Early stop: greedy pass@1 on training prompts (held-out ones stay unseen).
  const std::vector<PromptExample> probe(
      r.train.begin(), r.train.begin() + std::min<size_t>(r.train.size(), static_cast<size_t>(cfg.sft.stop_eval_prompts)));
  double loss = 0, probe_pass1 = -1;
  for (int64_t s = 0; s < cfg.sft.steps; ++s) {
    Json m;
    auto eps = w.source->next(s, 0, m);
    Json u = w.trainer->update(eps, s);
    loss = u.value("loss/ce", 0.0);
    w.steps = s + 1;
    if (cfg.sft.stop_at_pass1 > 0 && w.steps % cfg.sft.stop_eval_every == 0) {
      probe_pass1 = r.greedy_pass1(probe);
      if (probe_pass1 >= cfg.sft.stop_at_pass1) break;
    }
    if (bar) bar->update(w.steps, {{"loss", loss}});
  }
  if (bar) bar->finish();
  std::string stop_note;
  if (cfg.sft.stop_at_pass1 > 0)
    stop_note = ", training-prompt pass@1 " + std::to_string(probe_pass1) +
                (probe_pass1 >= cfg.sft.stop_at_pass1 ? " (reached sft.stop_at_pass1)" : " (sft.stop_at_pass1 not reached)");
  r.say("sft: " + std::to_string(w.steps) + " steps, final loss " + std::to_string(loss) + stop_note);
  if (cfg.run.sft_control) {
    torch::NoGradGuard ng;
    for (auto& p : r.policy.model()->parameters()) w.weights.push_back(p.detach().clone());
  }
  return w;
}

// The control of run.sft_control: the post-SFT weights, trained by SFT alone
// for `seconds` (the RL phase's wall time), then held-out pass@1.
double sft_control(Run& r, WarmStart& w, double seconds, int64_t* steps) {
  {
    torch::NoGradGuard ng;
    auto params = r.policy.model()->parameters();
    for (size_t i = 0; i < params.size(); ++i) params[i].copy_(w.weights[i]);
    w.trainer->optimizer().sync_master_from_params();
  }
  auto t0 = Clock::now();
  int64_t s = w.steps;
  while (seconds_since(t0) < seconds) {
    Json m;
    w.trainer->update(w.source->next(s, 0, m), s);
    ++s;
  }
  *steps = s - w.steps;
  return r.greedy_pass1(r.eval);
}

}  // namespace

// run.warm_start_cache: the warmed policy of a (model, data, sft, seed) key,
// in CACHE/<hash of the key>/{model/, meta.json}; meta.json holds the key
// itself, so a hash collision is a miss.
Json warm_start_key(const TrainConfig& cfg) {
  Json key{{"version", 1},
           {"model", cfg.raw.at("model")},
           {"data", cfg.raw.at("data")},
           {"sft", cfg.raw.at("sft")},
           {"seed", cfg.rl.seed}};
  // Decontamination changes the SFT pairs and the training prompts the early stop measures.
  if (cfg.decontamination.enabled())
    key["decontaminate"] = {{"sources", cfg.decontamination.sources},
                            {"ngram", cfg.decontamination.ngram},
                            {"overlap_threshold", cfg.decontamination.overlap_threshold}};
  return key;
}

fs::path warm_start_dir(const TrainConfig& cfg) {
  return fs::path(cfg.run.warm_start_cache) / fnv1a64_hex(warm_start_key(cfg).dump());
}

bool load_cached_warm_start(Run& r, int64_t* sft_steps) {
  const fs::path dir = warm_start_dir(r.cfg);
  if (!fs::exists(dir / "meta.json") || !fs::exists(dir / "model" / "config.json")) return false;
  const Json meta = read_json_file((dir / "meta.json").string());
  if (meta.value("key", Json()) != warm_start_key(r.cfg)) return false;
  LoadOptions lo;
  lo.dtype = r.cfg.model.dtype;
  lo.device = r.cfg.model.device;
  CausalLM saved = load_model(dir / "model", lo).model;
  torch::NoGradGuard ng;
  auto src = saved->named_parameters();
  for (auto& p : r.policy.model()->named_parameters()) {
    check(src.contains(p.key()), dir.string(), ": the cached warm start lacks ", p.key());
    p.value().copy_(src[p.key()]);
  }
  *sft_steps = meta.value("sft_steps", int64_t{0});
  r.say("sft: warm start loaded from " + dir.string() + " (" + std::to_string(*sft_steps) + " steps, run.warm_start_cache)");
  return true;
}

void save_cached_warm_start(Run& r, int64_t sft_steps) {
  const fs::path dir = warm_start_dir(r.cfg);
  const fs::path tmp = dir.string() + ".tmp-" + std::to_string(::getpid());
  fs::remove_all(tmp);
  try {
    SaveOptions so;
    so.tokenizer_source = r.policy.tokenizer_path;
    save_model(*r.policy.model(), tmp / "model", so);
    write_file_atomic(tmp / "meta.json", Json{{"key", warm_start_key(r.cfg)}, {"sft_steps", sft_steps}}.dump(2));
  } catch (const std::exception& e) {
    std::error_code ignored;
    fs::remove_all(tmp, ignored);  // no half-written cache entry left behind
    fail("run.warm_start_cache: saving the warm start to '", dir.string(), "': ", e.what());
  }
  std::error_code ec;
  fs::rename(tmp, dir, ec);  // another run may have saved the same warm start first: keep that one
  if (ec) fs::remove_all(tmp);
}

Json TrainRunSummary::to_json() const {
  Json j;
  j["kind"] = kind;
  j["steps"] = steps;
  j["sft_steps"] = sft_steps;
  j["wall_s"] = wall_s;
  j["steps_wall_s"] = steps_wall_s;
  auto opt = [](double v) { return v < 0 ? Json(nullptr) : Json(v); };
  j["pass1_before"] = opt(pass1_before);
  j["pass1_after"] = opt(pass1_after);
  j["pass1_control"] = opt(pass1_control);
  if (kl_to_model_before >= 0 || kl_to_model_after >= 0) {
    j["kl_to_model_before"] = opt(kl_to_model_before);
    j["kl_to_model_after"] = opt(kl_to_model_after);
  }
  if (pass1_control >= 0) j["control_sft_steps"] = control_sft_steps;
  const std::string held_out = process ? "process" : "preference";
  if (!preference_before.is_null()) j[held_out + "_before"] = preference_before;
  if (!preference_after.is_null()) j[held_out + "_after"] = preference_after;
  j["turns_mean"] = last_metrics.contains("episode/turns_mean") ? last_metrics["episode/turns_mean"] : Json(nullptr);
  j["rollout_tokens"] = rollout_tokens;
  j["world_size"] = world_size;
  j["out_dir"] = out_dir.string();
  j["final_model"] = final_model.empty() ? Json(nullptr) : Json(final_model.string());
  j["last_metrics"] = last_metrics;
  return j;
}

TrainRunSummary run_training(const TrainConfig& cfg, const TrainRunOptions& opts) {
  auto t_start = Clock::now();
  TrainRunSummary summary;
  summary.kind = trainer_kind_name(cfg.kind);
  summary.out_dir = cfg.run.out_dir;
  const bool rl = cfg.kind == TrainerKind::Grpo;
  const bool dpo = cfg.kind == TrainerKind::Dpo;
  const bool rm = cfg.kind == TrainerKind::Rm;

  // 1. Load everything and check every record before any step; the paths first, before anything is written.
  check_run_paths(cfg, !opts.reducer || opts.reducer->writes());
  if (!cfg.model.random_init.empty() && !fs::exists(cfg.model_path() / "config.json"))
    write_demo_policy(cfg.model_path(), cfg.rl.seed);
  LoadOptions lo;
  lo.dtype = cfg.model.dtype;
  lo.device = cfg.model.device;
  LocalReducer one_process;
  Reducer& reducer = opts.reducer ? *opts.reducer : one_process;
  const int64_t world = reducer.world_size();
  summary.world_size = world;
  if (world > 1) {
    // Every rank runs the same config and build (checked before anything long runs); every
    // step source splits its batch over the ranks (Shard).
    check_same_config(reducer, rlf_build_id() + "\n" + cfg.raw.dump());
    check(!cfg.rl.replay.enabled, cfg.source, ": replay.enabled keeps its buffer in one process; it is not supported "
          "with WORLD_SIZE = ", world, " yet");
    check(!cfg.rl.lessons.enabled, cfg.source, ": lessons.enabled keeps its lesson pool in one process; it is not "
          "supported with WORLD_SIZE = ", world, " yet");
    check(!cfg.rl.pool.enabled() || !cfg.rl.dynamic_sampling, cfg.source, ": curation.difficulty_pool and "
          "curation.reward_disagreement sum each rollout round's outcomes over the ranks in lockstep, but "
          "algorithm.dynamic_sampling lets ranks run different rounds: not supported with WORLD_SIZE = ", world,
          " yet (turn one of them off)");
    check(!rl || cfg.rl.prompts_per_step >= world, cfg.source, ": rollout.prompts_per_step = ", cfg.rl.prompts_per_step,
          " is smaller than WORLD_SIZE = ", world, ": every rank needs at least one prompt per step");
  }
  Run r{cfg, opts, reducer, load_policy(cfg.model_path(), cfg.model.tokenizer, lo), {}, {}, {}, {}, {}, {}, {}, {}, {}, {}};
  r.policy.model()->set_fast_cpu_path(cfg.model.fast_cpu_path);
  r.policy.model()->set_pack_weights(cfg.model.pack_weights);
  TokenizerChat chat = tokenizer_chat_of(*r.policy.tokenizer);
  if (!cfg.rewards.empty()) {
    RewardFactories extra = model_reward_factories();
    extra.merge(judge_reward_factories(opts.read_env));
    extra.merge(self_certainty_factories(std::make_shared<CausalLM>(r.policy.model())));
    r.rewards = make_reward_set(cfg.rewards, cfg.source, extra);
  }
  r.env = make_environment(cfg.rl.env, cfg.source + " [env]");
  // The critic starts (and an endpoint is probed) before anything long runs.
  if (cfg.kind == TrainerKind::Grpo && (cfg.rl.refine.enabled || cfg.rl.lessons.enabled))
    r.critic = make_critic(cfg.rl.critic, r.policy, opts.read_env, cfg.source + " [critic]");
  if (r.env->gives_rewards()) {
    const auto& c = r.rewards.components();
    if (std::none_of(c.begin(), c.end(), [](const RewardComponent& x) { return x.reward->name() == "env"; }))
      r.rewards.add("env", cfg.rl.env.reward_weight, std::make_unique<EnvReward>());
  }
  // A held-out gold reward watched against the trained one (checked before anything long runs;
  // the watch restarts empty after a resume).
  std::unique_ptr<GoldRewardWatch> gold_watch;
  if (rl && !cfg.rl.gold_reward.empty()) {
    const auto& comps = r.rewards.components();
    auto it = std::find_if(comps.begin(), comps.end(), [&](const RewardComponent& c) { return c.name == cfg.rl.gold_reward; });
    check(it != comps.end(), cfg.source, ": algorithm.gold_reward = \"", cfg.rl.gold_reward,
          "\" names no [[reward]] component; add one with that name and weight = 0");
    check(it->weight == 0, cfg.source, ": algorithm.gold_reward = \"", cfg.rl.gold_reward, "\" has weight ", it->weight,
          ", so it is trained on; a gold reward must be held out: set its weight = 0");
    gold_watch = std::make_unique<GoldRewardWatch>(cfg.rl.gold_reward);
  }
  // [curation] decontaminate: the evaluation sets, read once for [data] and [sft.data].
  const std::vector<EvalText> eval_texts =
      cfg.decontamination.enabled() ? load_eval_texts(cfg.decontamination) : std::vector<EvalText>{};
  int64_t n_too_long = 0, n_decontaminated = 0;
  if (cfg.has_data) {
    r.data = std::make_unique<PromptDataset>(PromptDataset::load(cfg.data, &chat));
    check(!r.data->train().empty(), cfg.source, ": the dataset has no training records");
    const bool env_prompts = cfg.rl.env.type != "external";  // an external environment writes its own prompts
    std::vector<PromptExample> train = r.data->train();
    if (cfg.decontamination.enabled()) {
      // Training prompts overlapping an evaluation set are dropped before anything else sees them.
      DecontaminationResult dc = decontaminate(train, eval_texts, cfg.decontamination);
      check(!dc.kept.empty(), cfg.source, ": curation.decontaminate dropped every training prompt (",
            dc.n_checked, "); raise curation.overlap_threshold or curation.ngram, or check the evaluation sets");
      write_decontamination_report(r, dc, "decontamination.json");
      n_decontaminated = dc.n_dropped();
      train = std::move(dc.kept);
    }
    r.train = env_prompts ? fitting_prompts(train, r, &n_too_long) : train;
    r.eval = env_prompts ? fitting_prompts(r.data->eval(), r, &n_too_long) : r.data->eval();
    check(!r.train.empty(), cfg.source, ": no training prompt fits the model's context");
    for (const auto* split : {&r.train, &r.eval})
      for (const auto& ex : *split) {
        r.rewards.check_record(ex.record, ex.reference, ex.where);
        r.env->check_record(ex);
      }
    r.say("data: " + r.data->summary() +
          (n_too_long ? "; " + std::to_string(n_too_long) + " prompts too long for the context skipped" : ""));
  }
  if (cfg.sft.enabled) {
    SftDataset sft = SftDataset::load(cfg.sft.data, &chat);
    // Held-out prompts stay held out: SFT pairs whose prompt is an eval prompt are dropped.
    r.sft_examples = without_held_out_prompts(sft.examples(), r.eval);
    if (cfg.decontamination.enabled()) {
      // SFT pairs whose prompt overlaps an evaluation set are dropped as RL prompts are.
      std::vector<PromptExample> prompts;
      for (const SftExample& e : r.sft_examples) {
        PromptExample p;
        p.id = e.id, p.raw_prompt = e.raw_prompt, p.prompt = e.prompt, p.where = e.where;
        prompts.push_back(std::move(p));
      }
      DecontaminationResult dc = decontaminate(prompts, eval_texts, cfg.decontamination, "SFT pairs");
      write_decontamination_report(r, dc, "decontamination_sft.json");
      std::vector<SftExample> kept;
      for (size_t k : dc.kept_index) kept.push_back(std::move(r.sft_examples[k]));
      r.sft_examples = std::move(kept);
    }
    check(!r.sft_examples.empty(), cfg.source, ": [sft] data has no examples (outside the held-out eval prompts",
          cfg.decontamination.enabled() ? " and not overlapping curation.decontaminate's evaluation sets)" : ")");
    r.say("sft: " + sft.summary() + "; " + std::to_string(sft.examples().size() - r.sft_examples.size()) +
          " pairs dropped because their prompt is a held-out eval prompt");
  }

  if (rm && cfg.process.enabled) {
    r.steps = std::make_unique<StepDataset>(StepDataset::load(cfg.process.data, &chat));
    int64_t n_long = 0;
    r.step_train = fitting_solutions(r.steps->train(), r, &n_long);
    r.step_eval = fitting_solutions(r.steps->eval(), r, &n_long);
    check(!r.step_train.empty(), cfg.source, ": [process.data] has no training solutions that fit the context");
    r.say(r.steps->summary() + (n_long ? "; " + std::to_string(n_long) + " too long for the context skipped" : ""));
  } else if (dpo || rm) {
    r.prefs = std::make_unique<PreferenceDataset>(PreferenceDataset::load(cfg.preference.data, &chat));
    // Held-out prompts stay held out: pairs whose prompt is a held-out eval prompt are dropped.
    std::set<std::string> held_out;
    for (const PromptExample& e : r.eval) held_out.insert(e.prompt);
    int64_t n_long = 0, n_held_out = 0;
    for (const PreferenceExample& p : fitting_pairs(r.prefs->train(), r, &n_long)) {
      if (held_out.count(p.prompt)) ++n_held_out;
      else r.pref_train.push_back(p);
    }
    r.pref_eval = fitting_pairs(r.prefs->eval(), r, &n_long);
    check(!r.pref_train.empty(), cfg.source, ": [preference.data] has no training pairs outside the held-out eval prompts");
    r.say(r.prefs->summary() + "; " + std::to_string(n_held_out) +
          " training pairs dropped because their prompt is a held-out eval prompt" +
          (n_long ? "; " + std::to_string(n_long) + " pairs too long for the context skipped" : ""));
  }

  // Only the writing rank (the one process here: Reducer) writes files.
  const bool writer = r.reducer.writes();
  const fs::path ckpt_dir = cfg.run.out_dir / "checkpoints";
  const fs::path ref_dir = cfg.run.out_dir / "reference";
  check_run_companions(cfg, *r.policy.model(), r.train);
  if (writer) {
    with_context(cfg.source + ": run.out_dir", [&] { ensure_directory(cfg.run.out_dir); });
    write_file_atomic(cfg.run.out_dir / "config.json", cfg.raw.dump(2));
  }
  const std::optional<fs::path> resume_from = opts.resume ? find_latest_checkpoint(ckpt_dir) : std::nullopt;
  if (opts.resume && !resume_from) r.say("no checkpoint in " + ckpt_dir.string() + ": starting fresh");

  // A critic from value.model loads (and is checked) before anything long runs.
  CausalLM loaded_critic{nullptr};
  if (rl && cfg.value.enabled && !cfg.value.model.empty()) {
    loaded_critic = with_context("value.model", [&] { return load_reward_model(cfg.value.model, lo).model; });
    check(loaded_critic->config().vocab_size == r.policy.model()->config().vocab_size, "value.model '",
          cfg.value.model, "' has a vocabulary of ", loaded_critic->config().vocab_size, " tokens but the policy's has ",
          r.policy.model()->config().vocab_size, ": the critic reads the policy's token ids, so it needs the same "
          "tokenizer (train it from the policy: trainer.kind = \"rm\")");
  }

  // 2. Warm start (fresh RL runs only), trained or loaded from run.warm_start_cache.
  WarmStart warm;
  bool warmed = false;
  if ((rl || dpo || rm) && cfg.sft.enabled && !resume_from) {
    const bool cached = !cfg.run.warm_start_cache.empty() && !cfg.run.sft_control;
    if (cached && load_cached_warm_start(r, &summary.sft_steps)) {
      warmed = true;
    } else {
      warm = warm_start(r);
      summary.sft_steps = warm.steps;
      warmed = true;
      if (cached && writer) save_cached_warm_start(r, warm.steps);
    }
  }

  // LoRA: adapters on the (warmed) policy, the base frozen from here on — for
  // a reward model on its backbone, once the score head is on (below). A
  // resumed run attaches the same adapters; the checkpoint restores them.
  auto attach_lora = [&] {
    CausalLMImpl& pm = *r.policy.model();
    if (!cfg.lora.init_from.empty())
      with_context("lora.adapter", [&] { load_lora_adapter(pm, cfg.lora.init_from); });
    else
      add_lora(pm, cfg.lora.adapter, cfg.rl.seed ^ 0x10A0ULL);
    set_lora_merged_inference(pm, cfg.lora.merge_rollout);
    int64_t trainable = 0, total = 0;
    for (const auto& p : pm.parameters()) {
      total += p.numel();
      if (p.requires_grad()) trainable += p.numel();
    }
    const LoraOptions& lo = lora_options(pm);
    std::string targets;
    for (const std::string& t : lo.targets) targets += (targets.empty() ? "" : ", ") + t;
    r.say("lora: rank " + std::to_string(lo.rank) + ", alpha " + Json(lo.alpha).dump() + " on " + targets + " (" +
          (cfg.lora.init_from.empty() ? std::string("fresh adapters") : "from " + cfg.lora.init_from) + "): " +
          std::to_string(trainable) + " trainable parameters of " + std::to_string(total));
  };
  if (cfg.lora.enabled && !rm) {
    check(!r.policy.model()->config().is_classifier(), cfg.source, ": lora.enabled: ", cfg.model_path().string(),
          " is a ", r.policy.model()->config().architecture, " (a classifier); trainer.kind = \"", cfg.raw["trainer"]["kind"].get<std::string>(),
          "\" trains causal LMs");
    attach_lora();
  }

  // 3. The KL reference: the policy as the steps start, unless "initial".
  // After a warm start that is the warmed policy, saved in run.out_dir/reference
  // so a resume uses the same one; without a warm start it is the model as loaded.
  const bool needs_ref =
      cfg.rl.kl_beta > 0 || ((dpo || cfg.preference.online) && !cfg.preference.loss.reference_free());
  CausalLM reference{nullptr};
  if (writer && !resume_from && fs::exists(ref_dir)) fs::remove_all(ref_dir);  // a fresh run never reuses another run's
  if (needs_ref) {
    if (cfg.lora.enabled) {
      // The base with the adapters off: the same tensors, no second copy.
      reference = lora_base_view(*r.policy.model());
    } else if (warmed && cfg.loss.kl_reference == "rl_start") {
      reference = frozen_copy(*r.policy.model());
      SaveOptions so;
      so.tokenizer_source = r.policy.tokenizer_path;
      if (writer) save_model(*reference, ref_dir, so);
    } else if (resume_from && cfg.loss.kl_reference == "rl_start" && fs::exists(ref_dir / "config.json")) {
      reference = frozen_load(ref_dir, cfg);
    } else {
      reference = frozen_load(cfg.model_path(), cfg);
    }
  }

  // Math-Shepherd: the training solutions' step labels from the (warmed) policy's own rollouts.
  Json mc_report;
  const fs::path mc_path = cfg.run.out_dir / "monte_carlo_labels.json";
  if (rm && cfg.process.enabled && cfg.process.labels == "monte_carlo" && resume_from) {
    // A resumed run trains on the labels the run estimated when it started.
    check(fs::exists(mc_path), mc_path.string(), " is missing: the run's Monte-Carlo step labels cannot be restored");
    const Json saved = read_json_file(mc_path.string());
    for (StepExample& e : r.step_train) {
      check(saved.contains(e.id), mc_path.string(), " has no labels for ", e.where, " (the data changed?)");
      e.labels = saved.at(e.id).get<std::vector<double>>();
    }
  } else if (rm && cfg.process.enabled && cfg.process.labels == "monte_carlo") {
    check(!r.policy.model()->config().is_classifier(), cfg.source, ": process.labels = \"monte_carlo\" samples "
          "rollouts from the model, and ", cfg.model_path().string(), " is a classifier; start from a causal LM");
    EvalOptions eo;
    eo.n_samples = cfg.process.mc_rollouts;
    eo.temperature = cfg.process.mc_temperature;
    eo.max_new_tokens = cfg.rl.sampling.max_new_tokens;
    eo.stop = cfg.rl.sampling.stop_strings;
    eo.accuracy_reward = cfg.rl.accuracy_reward;
    eo.add_special_tokens = cfg.rl.add_special_tokens;
    eo.max_batch_rows = cfg.rl.max_batch_rows;
    eo.seed = cfg.rl.seed ^ 0x3C5ULL;
    const MonteCarloReport rep =
        monte_carlo_step_labels(r.policy, r.step_train, r.rewards, cfg.process.data.delimiter, eo);
    mc_report = rep.to_json();
    r.say("process: Monte-Carlo step labels " + mc_report.dump());
    if (r.reducer.writes()) {
      Json saved = Json::object();
      for (const StepExample& e : r.step_train) saved[e.id] = e.labels;
      ensure_directory(cfg.run.out_dir);
      write_file_atomic(mc_path, saved.dump());
    }
  }
  if (rm && cfg.process.enabled)
    for (const StepExample& e : r.step_eval)
      check(e.labels.size() == e.steps.size(), e.where, ": a held-out solution needs its labels (the gold standard "
            "the PRM is measured against); give them, or set process.data.eval_size = 0");

  // A reward model: the (warmed) backbone with a score head; a classifier loaded as the model trains on.
  const auto& attributes = cfg.reward_model.attributes;
  const int64_t n_heads = attributes.empty() ? 1 : static_cast<int64_t>(attributes.size());
  if (rm && !r.policy.model()->config().is_classifier()) {
    CausalLM lm = r.policy.model();
    r.policy.loaded.model = make_reward_model(*lm, n_heads, cfg.rl.seed ^ 0x5C0ULL, attributes);
    r.policy.loaded.config = r.policy.model()->config();
    r.say("reward model: " + r.policy.model()->config().architecture + " on the " +
          (warmed ? "warmed" : "loaded") + " backbone, score head of " + std::to_string(n_heads) + " output(s)" +
          (attributes.empty() ? std::string() : " " + Json(attributes).dump()));
  }
  if (rm)
    check(r.policy.model()->config().num_labels == n_heads, cfg.model_path().string(), ": the classifier has ",
          r.policy.model()->config().num_labels, " outputs but the run trains ", n_heads,
          attributes.empty() ? std::string(" (one Bradley-Terry head)") : " (reward_model.attributes)");
  if (rm && !attributes.empty()) {
    int64_t rated = 0;
    for (const PreferenceExample& p : r.pref_train)
      for (const std::string& a : attributes) rated += p.chosen_ratings.count(a) + p.rejected_ratings.count(a);
    check(rated > 0, cfg.source, ": reward_model.attributes = ", Json(attributes).dump(),
          " but no training pair rates any of them (records need chosen_ratings / rejected_ratings objects; preset "
          "arithmetic: rated = true)");
  }
  if (rm && !cfg.reward_model.train_backbone)
    for (auto& p : r.policy.model()->named_parameters())
      if (p.key() != "score.weight") p.value().set_requires_grad(false);
  if (rm && cfg.lora.enabled) attach_lora();  // adapters on the backbone, the score head trained beside them

  // PPO's critic: the policy as RL starts with a zero value head, or the classifier loaded above.
  std::unique_ptr<ValueModel> value;
  if (rl && cfg.value.enabled && cfg.value.shared) {
    r.policy.model()->add_value_head();
    value = std::make_unique<ValueModel>(r.policy.model(), cfg.value, cfg.trainer.micro_batch_size, r.reducer);
    r.say("value model: a zero value head on the " + std::string(warmed ? "warmed " : "") +
          "policy's trunk (value.shared)");
  } else if (rl && cfg.value.enabled) {
    CausalLM critic = loaded_critic ? loaded_critic : critic_from_policy(*r.policy.model());
    critic->set_fast_cpu_path(cfg.model.fast_cpu_path);
    value = std::make_unique<ValueModel>(critic, cfg.value, cfg.trainer, r.reducer);
    r.say("value model: " + (cfg.value.model.empty() ? std::string(warmed ? "the warmed policy" : "the policy") +
                                                          " with a zero value head"
                                                    : cfg.value.model));
  }

  // The trainer, after the warm start: its optimizer snapshots the warmed weights.
  std::unique_ptr<Trainer> trainer;
  std::unique_ptr<Policy> rollout_policy;  // asynchronous rollouts: the copy the rollouts sample with
  std::unique_ptr<StepSource> source;
  if (rl) {
    trainer = std::make_unique<Trainer>(r.policy.model(), rl_terms(cfg), cfg.trainer, r.reducer);
    if (cfg.rl.max_staleness > 0) {
      // Asynchronous rollouts sample with a copy of the weights (train/rollout_pipeline.h).
      check(world == 1, cfg.source, ": rollout.max_staleness > 0 (asynchronous rollouts) runs in one process; it is not "
            "supported with WORLD_SIZE = ", world, " yet");
      rollout_policy = std::make_unique<Policy>(r.policy);
      rollout_policy->loaded.model = frozen_copy(*r.policy.model());
    }
    source = std::make_unique<RlSource>(r, rollout_policy ? *rollout_policy : r.policy, reference, value.get());
  } else if (dpo) {
    TrainerOptions to = cfg.trainer;
    to.log_entropy = false;
    to.log_rollout_agreement = false;  // the responses were not sampled by this policy
    std::vector<std::unique_ptr<LossTerm>> terms;
    terms.push_back(std::make_unique<PreferenceTerm>(cfg.preference.loss));
    trainer = std::make_unique<Trainer>(r.policy.model(), std::move(terms), to, r.reducer);
    source = std::make_unique<PreferenceSource>(r, reference);
  } else if (rm) {
    TrainerOptions to = cfg.trainer;
    to.log_entropy = false;
    to.log_rollout_agreement = false;
    std::vector<std::unique_ptr<LossTerm>> terms;
    if (cfg.process.enabled) terms.push_back(std::make_unique<ProcessRewardTerm>());
    else if (attributes.empty()) terms.push_back(std::make_unique<RewardModelTerm>(cfg.reward_model.margin));
    else terms.push_back(std::make_unique<RatingTerm>());
    trainer = std::make_unique<Trainer>(r.policy.model(), std::move(terms), to, r.reducer);
    if (cfg.process.enabled) source = std::make_unique<ProcessSource>(r);
    else source = std::make_unique<PreferenceSource>(r, CausalLM{nullptr});
  } else {
    TrainerOptions to = cfg.trainer;
    to.micro_batch_size = cfg.sft.micro_batch_size;
    to.log_entropy = cfg.loss.entropy_coef != 0;
    to.log_rollout_agreement = false;  // SFT targets were not sampled: nothing to agree with
    trainer = std::make_unique<Trainer>(r.policy.model(), sft_terms(cfg, false), to, r.reducer);
    // An SFT run with a kl term stays near the model as loaded (section 3 loaded it).
    source = std::make_unique<SftSource>(r, cfg.sft.batch_size, cfg.rl.seed ^ 0x5F7ULL, /*one_group=*/false, reference,
                                         cfg.sft.micro_batch_size);
  }
  check(!trainer->needs_reference() || reference, "a loss term needs a reference model and none is configured");

  // 4. Resume.
  CheckpointTargets targets;
  targets.model = r.policy.model().get();
  targets.optimizer = &trainer->optimizer();
  if (value && value->trainer())
    targets.companions["value"] = CompanionTarget{value->model().get(), &value->trainer()->optimizer()};
  CheckpointOptions co;
  co.keep_last = cfg.run.keep_checkpoints;
  co.tokenizer_source = r.policy.tokenizer_path;
  // ArmoRM's gating layer, fitted after the last step, travels with the model it weighs.
  std::shared_ptr<RewardGating> gating;
  co.model_extras = [&](const fs::path& model_dir) {
    if (gating) gating->save(model_dir);
  };
  int64_t start = 0, st_extra_tokens = 0;
  if (resume_from) {
    TrainerState st = load_checkpoint(*resume_from, targets, co);
    start = st.step;
    st_extra_tokens = st.extra.value("rollout_tokens", int64_t{0});
    source->restore_extra_state(st.extra.value("source", Json(nullptr)));
    source->cursor().restore(st.data_cursor);
    summary.pass1_before = st.extra.value("pass1_before", -1.0);
    summary.preference_before = st.extra.value("preference_before", Json(nullptr));
    r.say("resumed from " + resume_from->string() + " at step " + std::to_string(start));
    // A changed run.steps would re-plan a decaying schedule under the steps already taken:
    // the resumed run keeps the horizon it started with (after it, the rate stays at lr_min).
    const int64_t horizon = st.extra.value("lr_horizon", trainer->lr_horizon());
    if (horizon != trainer->lr_horizon() && cfg.trainer.lr.kind != LrScheduleKind::Constant) {
      const std::string note = "resume: the " + lr_schedule_kind_name(cfg.trainer.lr.kind) +
                               " schedule keeps its original horizon of " + std::to_string(horizon) +
                               " optimiser steps (the config now asks for " + std::to_string(trainer->lr_horizon()) +
                               "); after it the rate stays at optim.lr_min";
      std::cerr << note << std::endl;
      trainer->set_lr_horizon(horizon);
      if (value && value->trainer()) value->trainer()->set_lr_horizon(horizon);
    }
  }
  int64_t last_saved = resume_from ? start : -1;
  // Tokens generated so far (rollouts, refinements, critiques by the policy): run.rollout_token_budget.
  int64_t tokens_used = resume_from ? st_extra_tokens : 0;

  if (!resume_from && !rm) summary.pass1_before = r.greedy_pass1(r.eval);
  if (summary.pass1_before >= 0) r.say("held-out pass@1 before: " + std::to_string(summary.pass1_before));
  if (!resume_from && !rm) summary.kl_to_model_before = r.kl_to_model(r.eval);
  // Held-out preference pairs: the implicit-reward accuracy the loss optimises and the policy's own preference.
  // A multi-objective model without a gating layer is read as the mean of its attributes.
  RewardReadout readout;
  if (n_heads > 1) readout.direction.assign(static_cast<size_t>(n_heads), 1.0 / static_cast<double>(n_heads));
  summary.process = cfg.process.enabled;
  auto measure_prefs = [&] {
    if (rm && cfg.process.enabled)
      return measure_process_reward(*r.policy.model(), *r.policy.tokenizer, r.step_eval, cfg.process.data.delimiter,
                                    cfg.rl.add_special_tokens, cfg.trainer.micro_batch_size)
          .to_json();
    if (rm)
      return measure_reward_model(*r.policy.model(), *r.policy.tokenizer, r.pref_eval, cfg.rl.add_special_tokens,
                                  cfg.trainer.micro_batch_size, readout)
          .to_json();
    return measure_preferences(r.policy, *r.policy.model(), reference.is_empty() ? nullptr : reference.get(),
                               r.pref_eval, cfg.preference.loss,
                               cfg.rl.add_special_tokens, cfg.trainer.micro_batch_size)
        .to_json();
  };
  const bool held_out = !r.pref_eval.empty() || !r.step_eval.empty();
  if ((dpo || rm) && held_out && !resume_from) {
    summary.preference_before = measure_prefs();
    r.say("held-out preferences before: " + summary.preference_before.dump());
  }

  // 5. Steps.
  std::unique_ptr<MetricsWriter> metrics;
  std::unique_ptr<SamplesWriter> samples;
  if (writer) {
    metrics = std::make_unique<MetricsWriter>(cfg.run.out_dir / "metrics.jsonl", JsonlWriterOptions{start},
                                              cfg.run.tensorboard ? cfg.run.out_dir : fs::path());
    samples = std::make_unique<SamplesWriter>(cfg.run.out_dir / "samples.jsonl",
                                              SamplesLogOptions{cfg.run.samples_every, cfg.run.samples_per_step},
                                              JsonlWriterOptions{start});
  }
  ProgressOptions po;
  po.total_steps = cfg.run.steps;
  po.plain_every = std::max<int64_t>(1, cfg.run.steps / 20);
  po.start_step = start;
  po.force_plain = opts.quiet;
  std::unique_ptr<ProgressBar> bar;
  if (!opts.quiet) bar = std::make_unique<ProgressBar>(po);

  auto save = [&](int64_t step) {
    TrainerState st;
    st.step = step;
    st.scheduler_step = trainer->optimizer().step_count();
    st.data_cursor = source->cursor().state();
    st.extra = {{"pass1_before", summary.pass1_before}, {"lr_horizon", trainer->lr_horizon()},
                {"rollout_tokens", tokens_used}, {"preference_before", summary.preference_before}};
    if (Json s = source->extra_state(); !s.is_null()) st.extra["source"] = std::move(s);
    if (writer) summary.final_model = save_checkpoint(ckpt_dir, st, targets, co) / "model";
    if (writer)
      for (const auto& [name, report] : source->reports(step)) {
        ensure_directory(cfg.run.out_dir / "curation");
        write_file_atomic(cfg.run.out_dir / "curation" / name, report.dump(2));
      }
    last_saved = step;
  };

  // Asynchronous rollouts: batches sampled ahead on the rollout copy; nothing in flight across the first step
  // or a checkpoint boundary, so a resumed run is an uninterrupted one.
  std::unique_ptr<RolloutPipeline> pipeline;
  if (rollout_policy) {
    const int64_t every = cfg.run.checkpoint_every;
    pipeline = std::make_unique<RolloutPipeline>(
        r.policy.model(), rollout_policy->model(), cfg.rl.max_staleness,
        [start, every](int64_t s) { return s == start || (every > 0 && s % every == 0); }, cfg.run.steps,
        [&](int64_t s, int32_t version) {
          RolloutBatch b;
          b.episodes = source->next(s, version, b.metrics);
          if (samples && samples->due(s + 1)) b.samples = source->samples();
          return b;
        });
  }
  int64_t notes_shown = 0;
  FailedStepWatch failed_steps(rl ? cfg.run.max_failed_steps : 0);
  const int64_t budget = cfg.run.rollout_token_budget;
  int64_t end = std::max(start, cfg.run.steps);
  for (int64_t step = start; step < cfg.run.steps; ++step) {
    if (budget > 0 && tokens_used >= budget) {
      end = step;
      break;
    }
    auto t0 = Clock::now();
    const double payload0 = r.reducer.payload_bytes();
    Json m;
    m["step"] = step + 1;
    const int32_t version = static_cast<int32_t>(trainer->optimizer().step_count());
    std::vector<Episode> episodes;
    std::vector<SampleRecord> batch_samples;
    if (pipeline) {
      RolloutBatch b = pipeline->take(step, version);
      episodes = std::move(b.episodes);
      batch_samples = std::move(b.samples);
      m.update(b.metrics);
      m["rollout/staleness"] = step - b.sampled_at;  // trainer steps between the sampling weights and these
      m["time/rollout_wait_s"] = seconds_since(t0);          // what the rollouts still cost the step after overlapping
    } else {
      episodes = source->next(step, version, m);
    }
    auto t_update = Clock::now();
    // LoRA dropout masks: drawn from (run.seed, step), so a resumed step draws the same ones.
    if (cfg.lora.enabled && r.policy.model()->lora->options.dropout > 0)
      r.policy.model()->lora->dropout_gen.set_current_seed(cfg.rl.seed * 0x9E3779B97F4A7C15ULL + 0x10AD0ULL +
                                                           static_cast<uint64_t>(step));
    m.update(trainer->update(episodes, step));
    if (value) m.update(value->update(episodes, step));
    m["time/update_s"] = seconds_since(t_update);
    m["time/step_s"] = seconds_since(t0);
    m["dist/world_size"] = world;
    m["dist/payload_mb"] = (r.reducer.payload_bytes() - payload0) / 1e6;
    if (world > 1 && cfg.dist.check_every > 0 && (step + 1) % cfg.dist.check_every == 0) {
      std::vector<torch::Tensor> params = r.policy.model()->parameters();
      if (value && value->trainer())
        for (const auto& p : value->model()->parameters()) params.push_back(p);
      check_replicas_agree(r.reducer, params, step + 1);
    }
    if (rl) {
      tokens_used += static_cast<int64_t>(m.value("rollout/generated_tokens", 0.0) + m.value("refine/generated_tokens", 0.0) +
                                          m.value("lessons/generated_tokens", 0.0));
      m["rollout/tokens_total"] = tokens_used;
    }
    summary.steps_wall_s += seconds_since(t0);
    if (gold_watch && m.contains("reward/mean") && m.contains("reward/" + cfg.rl.gold_reward + "/mean")) {
      const double gold = m["reward/" + cfg.rl.gold_reward + "/mean"].get<double>();
      m["diag/gold_reward"] = gold;
      if (auto warning = gold_watch->add(step + 1, m["reward/mean"].get<double>(), gold)) {
        m["notes"].push_back(*warning);
        m["diag/overoptimization_warning"] = 1.0;
      }
    }
    const std::optional<std::string> every_episode_failed = failed_steps.add(step + 1, m, episodes);
    if (m.contains("notes")) {
      for (const auto& n : m["notes"])
        if (notes_shown++ < 20) r.say("step " + std::to_string(step + 1) + ": " + n.get<std::string>());
      m.erase("notes");
    }
    if (!rm && cfg.run.eval_every > 0 && (step + 1) % cfg.run.eval_every == 0 && !r.eval.empty()) {
      if (pipeline) pipeline->wait_idle();  // the environment and rewards are the rollouts' too
      m["eval/pass1"] = r.greedy_pass1(r.eval);
    }
    if (r.data) m["data/skipped_records"] = static_cast<double>(r.data->n_skipped() + n_too_long);
    if (cfg.decontamination.enabled()) m["data/decontaminated_prompts"] = static_cast<double>(n_decontaminated);
    if (metrics) metrics->write_step(step + 1, numeric(m));
    if (samples && samples->due(step + 1)) samples->write(step + 1, pipeline ? batch_samples : source->samples());
    if (every_episode_failed) {
      if (bar) bar->finish();
      fail(cfg.source, ": ", *every_episode_failed);
    }
    if (bar)
      bar->update(step + 1, rl    ? std::vector<std::pair<std::string, double>>{{"reward", m.value("reward/mean", 0.0)},
                                                                             {"acc", m.value("accuracy", 0.0)}}
                            : dpo ? std::vector<std::pair<std::string, double>>{{"loss", m.value("loss/pref", 0.0)},
                                                                             {"acc", m.value("pref/accuracy", 0.0)}}
                            : rm  ? std::vector<std::pair<std::string, double>>{
                                        {"loss", m.value("loss/rm", m.value("loss/prm", m.value("loss/rm_rating", 0.0)))},
                                        {"acc", m.value("rm/accuracy", m.value("prm/accuracy", 0.0))}}
                                  : std::vector<std::pair<std::string, double>>{{"loss", m.value("loss/ce", 0.0)}});
    const bool budget_spent = budget > 0 && tokens_used >= budget;
    if (budget_spent) end = step + 1;
    if (cfg.run.checkpoint_every > 0 && (step + 1) % cfg.run.checkpoint_every == 0 && step + 1 < cfg.run.steps &&
        !budget_spent)
      save(step + 1);
    summary.last_metrics = m;
  }
  if (bar) bar->finish();
  if (pipeline) pipeline->wait_idle();  // batches launched past the end are discarded; the state is read below
  summary.steps = end;
  summary.rollout_tokens = tokens_used;
  if (budget > 0 && end < cfg.run.steps)
    r.say("run.rollout_token_budget = " + std::to_string(budget) + " reached after " + std::to_string(end) + " steps (" +
          std::to_string(tokens_used) + " tokens)");
  Json gating_fit;
  if (rm && cfg.reward_model.gating) {
    if (last_saved == summary.steps && resume_from) {
      auto g = RewardGating::load(*resume_from / "model");
      check(g.has_value(), resume_from->string(), ": the finished run's model has no ", kGatingFile);
      gating = std::make_shared<RewardGating>(std::move(*g));
    } else {
      gating = std::make_shared<RewardGating>(fit_reward_gating(r, cfg.reward_model.gating_options, &gating_fit));
    }
  }
  // A resume that had nothing left to do keeps the checkpoint it loaded (no re-save).
  if (last_saved != summary.steps) save(summary.steps);
  else if (resume_from) summary.final_model = *resume_from / "model";

  // 6. Finish.
  if (!rm) summary.pass1_after = r.greedy_pass1(r.eval);
  if (!rm) summary.kl_to_model_after = r.kl_to_model(r.eval);
  if ((dpo || rm) && held_out) {
    Json ungated;
    if (gating) {
      ungated = measure_prefs();
      readout = RewardReadout{};
      readout.gating = gating;
    }
    summary.preference_after = measure_prefs();
    if (!mc_report.is_null()) summary.preference_after["monte_carlo_labels"] = mc_report;
    if (gating) {
      summary.preference_after["ungated"] = ungated;
      if (!gating_fit.is_null()) summary.preference_after["gating_fit"] = gating_fit;
    }
    r.say("held-out preferences after: " + summary.preference_after.dump());
  }
  if (cfg.run.sft_control && warm.trainer && summary.pass1_after >= 0) {
    summary.pass1_control = sft_control(r, warm, summary.steps_wall_s, &summary.control_sft_steps);
    r.say("control (SFT alone for " + std::to_string(summary.steps_wall_s) + " s, " +
          std::to_string(summary.control_sft_steps) + " steps): held-out pass@1 " + std::to_string(summary.pass1_control));
  }
  if (writer) {
    // Plot the curves this run has (eval/pass1 only with eval_every > 0).
    std::vector<std::string> keys;
    auto records = read_jsonl(cfg.run.out_dir / "metrics.jsonl");
    for (const char* k : {"reward/mean", "accuracy", "eval/pass1", "episode/turns_mean", "completion/length_mean",
                          "policy/entropy", "kl/ref", "loss/ce", "loss/pref", "pref/accuracy", "pref/margin", "loss/rm",
                          "rm/accuracy", "rm/margin", "loss/rm_rating", "loss/prm", "prm/accuracy", "loss/value", "value/explained_variance", "kl/beta"})
      if (std::any_of(records.begin(), records.end(), [&](const Json& x) { return x.contains(k) && x[k].is_number(); }))
        keys.push_back(k);
    if (!keys.empty()) write_metrics_plot(cfg.run.out_dir / "metrics.jsonl", cfg.run.out_dir / "plot.html", keys);
  }
  summary.wall_s = seconds_since(t_start);
  if (writer) write_file_atomic(cfg.run.out_dir / "summary.json", summary.to_json().dump(2));
  if (writer && !opts.quiet) {
    auto records = read_jsonl(cfg.run.out_dir / "metrics.jsonl");
    std::vector<std::string> keys = rl    ? std::vector<std::string>{"reward/mean", "accuracy", "episode/turns_mean",
                                                                     "completion/length_mean", "policy/entropy", "time/step_s"}
                                    : dpo ? std::vector<std::string>{"loss/pref", "pref/accuracy", "pref/margin",
                                                                     "pref/chosen_logp", "pref/rejected_logp", "time/step_s"}
                                    : rm && cfg.process.enabled
                                        ? std::vector<std::string>{"loss/prm", "prm/accuracy", "time/step_s"}
                                    : rm && !attributes.empty()
                                        ? std::vector<std::string>{"loss/rm_rating", "rm/rating_mse", "time/step_s"}
                                    : rm  ? std::vector<std::string>{"loss/rm", "rm/accuracy", "rm/margin", "time/step_s"}
                                          : std::vector<std::string>{"loss/ce", "time/step_s"};
    std::cout << format_metrics_summary(summarize_metrics(records, keys));
    if (summary.pass1_before >= 0)
      std::printf("held-out pass@1: before %.3f  after %.3f\n", summary.pass1_before, summary.pass1_after);
    if (summary.pass1_control >= 0) std::printf("held-out pass@1 of the SFT-only control: %.3f\n", summary.pass1_control);
    if (summary.process && summary.preference_before.is_object() && summary.preference_after.is_object())
      std::printf("held-out process reward model: step accuracy before %.3f  after %.3f; solutions judged right "
                  "%.3f; first wrong step found %.3f\n",
                  summary.preference_before.value("step_accuracy", 0.0),
                  summary.preference_after.value("step_accuracy", 0.0),
                  summary.preference_after.value("solution_accuracy", 0.0),
                  summary.preference_after.value("first_error", 0.0));
    else if (rm && summary.preference_before.is_object() && summary.preference_after.is_object())
      std::printf("held-out pairwise accuracy of the reward model: before %.3f  after %.3f (margin %.3f, ECE %.3f)\n",
                  summary.preference_before.value("accuracy", 0.0), summary.preference_after.value("accuracy", 0.0),
                  summary.preference_after.value("margin", 0.0), summary.preference_after.value("ece", 0.0));
    else if (summary.preference_before.is_object() && summary.preference_after.is_object())
      std::printf("held-out preference accuracy (implicit reward): before %.3f  after %.3f; the policy's own "
                  "(mean log-prob per token): before %.3f  after %.3f\n",
                  summary.preference_before.value("accuracy", 0.0), summary.preference_after.value("accuracy", 0.0),
                  summary.preference_before.value("logp_accuracy", 0.0),
                  summary.preference_after.value("logp_accuracy", 0.0));
    std::cout << "run directory: " << cfg.run.out_dir.string() << " (metrics.jsonl, samples.jsonl, plot.html, checkpoints/)\n";
  }
  return summary;
}

}  // namespace rlf

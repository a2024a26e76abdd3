#include "train/distillation.h"

#include <chrono>
#include <cmath>
#include <limits>

#include "feedback/feedback_prompt.h"
#include "train/micro_batch.h"
#include "util/error.h"
#include "util/strings.h"

namespace rlf {

namespace {

using Clock = std::chrono::steady_clock;


}  // namespace

const EnumNames<DistillTeacherKind>& distill_teacher_names() {
  static const EnumNames<DistillTeacherKind> names{
      "distill.teacher",
      {{DistillTeacherKind::Self, "self"}, {DistillTeacherKind::Frozen, "frozen"}, {DistillTeacherKind::Model, "model"},
       {DistillTeacherKind::Ema, "ema"}}};
  return names;
}

const EnumNames<DistillGuard>& distill_guard_names() {
  static const EnumNames<DistillGuard> names{
      "distill.guard", {{DistillGuard::None, "none"}, {DistillGuard::VerifierSign, "verifier_sign"}}};
  return names;
}

int64_t apply_verifier_sign_guard(Episode& e, std::optional<bool> correct) {
  check(e.teacher_logprob.size() == e.tokens.size() && e.old_logprob.size() == e.tokens.size(),
        "distill.guard: the episode needs teacher and old log-probs on every token");
  int64_t n_dropped = 0;
  for (size_t t = 0; t < e.tokens.size(); ++t) {
    if (e.loss_weight[t] <= 0) continue;
    const float teacher = e.teacher_logprob[t], student = e.old_logprob[t];
    const bool keep = correct && (*correct ? teacher > student : teacher < student);
    if (keep) continue;
    e.teacher_logprob[t] = std::numeric_limits<float>::quiet_NaN();
    ++n_dropped;
  }
  return n_dropped;
}

void DistillOptions::validate() const {
  check(std::isfinite(coef) && coef > 0, "distill.coef must be > 0 (got ", coef, ")");
  check(teacher != DistillTeacherKind::Model || !teacher_path.empty(),
        "distill.teacher = \"model\" needs distill.teacher_path (the teacher's model directory)");
  check(std::isfinite(ema_decay) && ema_decay > 0 && ema_decay < 1, "distill.ema_decay must be in (0, 1) (got ",
        ema_decay, "; 0.99 averages over about 100 optimiser steps)");
  check(teacher_context().find("{prompt}") != std::string::npos,
        "distill.context must contain {prompt} (the teacher sees the task)");
  check(top_k >= 0, "distill.top_k must be >= 0 (got ", top_k, ")");
  check(top_k > 0 || divergence == algo::DistillDivergence::ReverseKl, "distill.divergence = \"",
        algo::distill_divergence_name(divergence),
        "\" needs the teacher's distribution: set distill.top_k >= 1 (the sampled-token estimate, top_k = 0, is "
        "reverse_kl only)");
  check(std::isfinite(beta) && beta > 0 && beta < 1, "distill.beta must be in (0, 1) (got ", beta,
        "; beta = 0 is divergence = \"forward_kl\", 1 is \"reverse_kl\")");
}

std::string DistillOptions::teacher_context() const {
  if (!context.empty()) return context;
  return teacher == DistillTeacherKind::Model ? "{prompt}" : "The answer is {reference}.\n{prompt}";
}

Json DistillStats::metrics(Reducer& reducer) const {
  struct {
    double episodes, skipped, truncated, teacher_s;
    double critic_failures, generated_tokens;
    double guard_tokens, guard_dropped;
  } v{.episodes = static_cast<double>(n_episodes),
      .skipped = static_cast<double>(n_skipped),
      .truncated = static_cast<double>(n_truncated),
      .teacher_s = teacher_s,
      .critic_failures = static_cast<double>(n_critic_failures),
      .generated_tokens = static_cast<double>(n_generated_tokens),
      .guard_tokens = static_cast<double>(n_guard_tokens),
      .guard_dropped = static_cast<double>(n_guard_dropped)};
  reducer.sum_fields(v);
  Json m{{"distill/episodes", v.episodes},   {"distill/skipped", v.skipped},
         {"distill/truncated", v.truncated}, {"distill/critic_failures", v.critic_failures},
         {"distill/generated_tokens", v.generated_tokens}, {"time/teacher_s", v.teacher_s}};
  if (guarded) m["distill/guard_dropped"] = v.guard_tokens > 0 ? v.guard_dropped / v.guard_tokens : 0.0;
  return m;
}

DistillTeacher::DistillTeacher(Policy& policy, DistillOptions options, size_t accuracy_component,
                               bool add_special_tokens, int64_t micro_batch_size, Critic* critic,
                               CausalLM teacher_model)
    : policy_(policy),
      critic_(critic),
      options_(std::move(options)),
      accuracy_component_(accuracy_component),
      add_special_tokens_(add_special_tokens),
      micro_batch_size_(micro_batch_size) {
  options_.validate();
  check(!options_.needs_critic() || critic_ != nullptr,
        "distill.context has {critique}: it needs a critic ([critic]) to write it");
  if (options_.teacher == DistillTeacherKind::Frozen || options_.teacher == DistillTeacherKind::Ema) {
    const bool frozen = options_.teacher == DistillTeacherKind::Frozen;
    check(static_cast<bool>(teacher_model), "distill.teacher = \"", frozen ? "frozen" : "ema", "\" needs ",
          frozen ? "the KL reference model" : "the EMA weights (train/ema_weights.h)");
    own_teacher_ = std::make_unique<Policy>(policy);
    own_teacher_->loaded.model = std::move(teacher_model);
  }
  if (options_.teacher == DistillTeacherKind::Model) {
    LoadOptions lo;
    lo.device = policy.model()->device().str();
    own_teacher_ = std::make_unique<Policy>(with_context("distill.teacher_path", [&] {
      return load_policy(options_.teacher_path, "", lo);
    }));
    own_teacher_->model()->eval();
    for (auto& p : own_teacher_->model()->parameters()) p.set_requires_grad(false);
    const int64_t v_teacher = own_teacher_->loaded.config.vocab_size, v_policy = policy.loaded.config.vocab_size;
    check(v_teacher == v_policy, "distill.teacher_path: the teacher's vocabulary (", v_teacher,
          " tokens) differs from the policy's (", v_policy,
          "); distillation compares log-probs of the same token ids, so both need the same tokenizer");
  }
}

DistillStats DistillTeacher::add_teacher_logprobs(std::vector<ScoredGroup>& groups) {
  const auto t0 = Clock::now();
  DistillStats st;
  Policy& teacher = own_teacher_ ? *own_teacher_ : policy_;
  const int64_t window = teacher.loaded.config.max_position_embeddings;
  std::vector<Episode> views;   // teacher context + the episode's tokens after its prompt
  std::vector<Episode*> owners;
  std::vector<std::optional<bool>> verdicts;  // the owners'
  // The episodes that get a teacher, with what the context is filled from.
  struct Pending {
    Episode* episode;
    CritiqueRequest request;
    std::string context;
    std::optional<bool> verdict;  // the accuracy reward's (unset: not scored)
  };
  std::vector<Pending> pending;
  const std::string context = options_.teacher_context();
  const bool needs_sibling = context.find("{sibling}") != std::string::npos;
  for (ScoredGroup& g : groups) {
    std::string sibling;
    bool has_sibling = false;
    for (size_t i = 0; i < g.group.episodes.size() && !has_sibling; ++i)
      if (g.group.episodes[i].source == EpisodeSource::Rollout && is_correct(g, accuracy_component_, i))
        sibling = g.group.episodes[i].transcript(), has_sibling = true;
    for (size_t i = 0; i < g.group.episodes.size(); ++i) {
      Episode& e = g.group.episodes[i];
      if (e.n_policy_tokens() == 0) continue;
      if ((options_.failed_only && is_correct(g, accuracy_component_, i)) || (needs_sibling && !has_sibling)) {
        ++st.n_skipped;
        continue;
      }
      Pending p{.episode = &e, .request = {}, .context = replace_all(context, "{sibling}", sibling)};
      p.request.task = g.group.task;
      p.request.prompt = g.group.prompt;
      p.request.response = e.transcript();
      p.request.reward = e.reward;
      p.request.correct = is_correct(g, accuracy_component_, i);
      if (g.scores.results[accuracy_component_][i].score) p.verdict = p.request.correct;
      p.request.explanation = g.scores.describe(i);
      pending.push_back(std::move(p));
    }
  }
  std::vector<std::string> critiques(pending.size());
  std::vector<bool> critiqued(pending.size(), true);
  if (options_.needs_critic() && !pending.empty()) {
    std::vector<CritiqueRequest> requests;
    for (const Pending& p : pending) requests.push_back(p.request);
    const std::vector<Critique> got = critic_->critique(requests);
    check(got.size() == requests.size(), "critic '", critic_->name(), "' returned ", got.size(), " critiques for ",
          requests.size(), " requests");
    for (size_t k = 0; k < got.size(); ++k) {
      critiqued[k] = got[k].ok, critiques[k] = got[k].text;
      st.n_generated_tokens += got[k].n_generated_tokens;
    }
  }
  for (size_t k = 0; k < pending.size(); ++k) {
    Episode& e = *pending[k].episode;
    if (!critiqued[k]) {
      ++st.n_critic_failures, ++st.n_skipped;
      continue;
    }
    auto fitted = fit_feedback_prompt(pending[k].context, pending[k].request, critiques[k], *teacher.tokenizer,
                                      add_special_tokens_, e.n_completion(), window);
    if (!fitted) {
      ++st.n_skipped;
      continue;
    }
    st.n_truncated += fitted->truncated;
    Episode v;
    v.tokens = fitted->ids;
    v.tokens.insert(v.tokens.end(), e.tokens.begin() + e.n_prompt, e.tokens.end());
    v.n_prompt = static_cast<int64_t>(fitted->ids.size());
    v.loss_weight.assign(v.tokens.size(), 0.0f);
    v.old_logprob.assign(v.tokens.size(), 0.0f);
    if (v.tokens.size() < 2) {
      ++st.n_skipped;
      continue;
    }
    views.push_back(std::move(v));
    owners.push_back(&e);
    verdicts.push_back(pending[k].verdict);
  }
  if (!views.empty()) score_views(teacher, views, owners);
  st.guarded = options_.guard == DistillGuard::VerifierSign;
  for (size_t i = 0; i < owners.size() && st.guarded; ++i) {
    st.n_guard_tokens += owners[i]->n_policy_tokens();
    st.n_guard_dropped += apply_verifier_sign_guard(*owners[i], verdicts[i]);
  }
  st.n_episodes = static_cast<int64_t>(owners.size());
  st.teacher_s = std::chrono::duration<double>(Clock::now() - t0).count();
  return st;
}

void DistillTeacher::score_views(Policy& teacher, const std::vector<Episode>& views,
                                 const std::vector<Episode*>& owners) {
  std::vector<const Episode*> ptrs;
  for (const Episode& v : views) ptrs.push_back(&v);
  std::vector<std::vector<float>> lps;
  std::vector<TeacherTopK> tops;
  if (options_.top_k > 0) tops = teacher_topk(*teacher.model(), ptrs, options_.top_k, micro_batch_size_, &lps);
  else lps = recompute_logprobs(*teacher.model(), ptrs, micro_batch_size_);
  const int64_t k = options_.top_k;
  for (size_t i = 0; i < owners.size(); ++i) {
    Episode& e = *owners[i];
    const int64_t shift = views[i].n_prompt - e.n_prompt;  // view position = episode position + shift
    const int64_t n = static_cast<int64_t>(e.tokens.size());
    e.teacher_logprob.assign(e.tokens.size(), 0.0f);
    for (int64_t t = e.n_prompt; t < n; ++t) e.teacher_logprob[t] = lps[i][t + shift];
    if (k == 0) continue;
    e.teacher_topk_id.assign(e.tokens.size() * k, 0);
    e.teacher_topk_logprob.assign(e.tokens.size() * (k + 1), 0.0f);
    for (int64_t t = e.n_prompt; t < n; ++t) {
      std::copy_n(tops[i].ids.begin() + (t + shift) * k, k, e.teacher_topk_id.begin() + t * k);
      std::copy_n(tops[i].logprobs.begin() + (t + shift) * (k + 1), k + 1, e.teacher_topk_logprob.begin() + t * (k + 1));
    }
  }
}

}  // namespace rlf

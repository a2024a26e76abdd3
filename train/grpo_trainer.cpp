#include "train/grpo_trainer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>

#include "util/error.h"

namespace rlf {

namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

double mean_of(const std::vector<double>& v) {
  return v.empty() ? 0.0 : std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
}

double std_of(const std::vector<double>& v) {
  if (v.size() < 2) return 0.0;
  const double m = mean_of(v);
  double s = 0;
  for (double x : v) s += (x - m) * (x - m);
  return std::sqrt(s / static_cast<double>(v.size() - 1));
}

// Per-token KL estimate k(logp, ref) on stored log-probs (for KL in the reward).
double kl_value(double lp, double ref, algo::KlEstimator est) {
  const double d = lp - ref;
  switch (est) {
    case algo::KlEstimator::K1: return d;
    case algo::KlEstimator::K2: return 0.5 * d * d;
    case algo::KlEstimator::K3: return std::exp(-d) + d - 1.0;
  }
  return 0.0;
}

}  // namespace

void GrpoOptions::validate() const {
  check(prompts_per_step > 0, "rollout.prompts_per_step must be > 0 (got ", prompts_per_step, ")");
  check(group_size > 0, "rollout.group_size must be > 0 (got ", group_size, ")");
  check(max_batch_rows > 0, "rollout.max_batch_rows must be > 0 (got ", max_batch_rows, ")");
  check(epochs > 0, "algorithm.epochs must be > 0 (got ", epochs, ")");
  check(mini_batches > 0 && mini_batches <= prompts_per_step, "algorithm.mini_batches must be in [1, prompts_per_step] (got ",
        mini_batches, ")");
  check(kl_placement == "loss" || kl_placement == "reward", "algorithm.kl_placement must be \"loss\" or \"reward\" (got \"",
        kl_placement, "\")");
  check(dynamic_sampling_max_rounds > 0, "algorithm.dynamic_sampling_max_rounds must be > 0");
  sampling.validate();
  advantage.validate();
  update.validate();
  rlf::validate(optimizer);
  rlf::validate(lr);  // at config load, so a bad schedule fails before SFT or any step
}

GrpoTrainer::GrpoTrainer(Policy& policy, const std::vector<PromptExample>& examples, RewardSet& rewards,
                         GrpoOptions options, CausalLM reference)
    : policy_(policy),
      examples_(examples),
      rewards_(rewards),
      options_(std::move(options)),
      reference_(std::move(reference)),
      engine_(policy.model(), policy.tokenizer,
              EngineOptions{options_.max_batch_rows, 0, policy.eos_token_ids, options_.seed}),
      cursor_(examples.size(), DataCursorOptions{static_cast<size_t>(options_.prompts_per_step), true, options_.seed}) {
  options_.validate();
  check(!rewards_.empty(), "no reward configured: add at least one [[reward]] table");
  check(options_.update.kl_beta == 0 || reference_, "algorithm.kl_beta > 0 needs a reference model");
  optimizer_ = std::make_unique<Optimizer>(*policy_.model(), options_.optimizer);
}

std::vector<ScoredGroup> GrpoTrainer::collect_and_score(int64_t n_prompts, Json& metrics) {
  std::vector<ScoredGroup> kept;
  double rollout_s = 0, reward_s = 0;
  int64_t generated = 0, n_dropped = 0, rounds = 0;
  std::vector<ScoredGroup> dropped;
  while (static_cast<int64_t>(kept.size()) < n_prompts && rounds < options_.dynamic_sampling_max_rounds) {
    // 1. collect
    auto t0 = Clock::now();
    std::vector<size_t> idx = cursor_.next_batch();
    std::vector<GenerationRequest> requests;
    for (size_t r = 0; r < idx.size(); ++r) {
      GenerationRequest req;
      req.prompt_ids = policy_.tokenizer->encode(examples_[idx[r]].prompt, options_.add_special_tokens);
      check(!req.prompt_ids.empty(), examples_[idx[r]].where, ": the prompt encodes to no tokens");
      req.n = options_.group_size;
      req.params = options_.sampling;
      req.params.seed = mix_seed(options_.seed ^ mix_seed(static_cast<uint64_t>(steps_done_) * 1000003u + rounds * 1009u + r));
      requests.push_back(std::move(req));
    }
    auto seqs = engine_.generate(requests);
    rollout_s += since(t0);

    // 2. score
    t0 = Clock::now();
    std::vector<ScoredGroup> groups(idx.size());
    for (const auto& s : seqs) {
      ScoredGroup& g = groups[s.request_index];
      g.example = &examples_[idx[s.request_index]];
      Episode e = Episode::single_turn(0, s.prompt_ids, s.completion_ids, s.logprobs);
      e.finish_reason = finish_reason_name(s.finish_reason);
      e.completion_text = s.text;
      generated += static_cast<int64_t>(s.completion_ids.size());
      g.episodes.push_back(std::move(e));
    }
    for (auto& g : groups) {
      RewardGroup rg;
      rg.prompt = g.example->prompt;
      rg.reference = g.example->reference;
      rg.record = g.example->record;
      rg.max_new_tokens = options_.sampling.max_new_tokens;
      for (const auto& e : g.episodes)
        rg.samples.push_back({e.completion_text, std::vector<int32_t>(e.tokens.begin() + e.n_prompt, e.tokens.end()), e.finish_reason});
      g.scores = rewards_.score(rg);
      g.totals = g.scores.totals(options_.reward_aggregation);
      for (size_t i = 0; i < g.episodes.size(); ++i) g.episodes[i].reward = g.totals[i];
    }
    reward_s += since(t0);

    // 3. filter (DAPO dynamic sampling)
    for (auto& g : groups) {
      bool informative = true;
      if (options_.dynamic_sampling) {
        std::vector<double> v;
        for (const auto& t : g.totals)
          if (t) v.push_back(*t);
        informative = v.size() >= 2 && std::any_of(v.begin(), v.end(), [&](double x) { return std::abs(x - v[0]) > 1e-12; });
      }
      if (informative && static_cast<int64_t>(kept.size()) < n_prompts) kept.push_back(std::move(g));
      else if (!informative) ++n_dropped, dropped.push_back(std::move(g));
    }
    ++rounds;
    if (!options_.dynamic_sampling) break;
  }
  // Out of rounds: fill with dropped groups (they get zero advantage) so the step has its size.
  for (auto& g : dropped)
    if (static_cast<int64_t>(kept.size()) < n_prompts) kept.push_back(std::move(g));
  engine_.release_cache();  // training reclaims the cache memory
  metrics["time/rollout_s"] = rollout_s;
  metrics["time/reward_s"] = reward_s;
  metrics["rollout/generated_tokens"] = generated;
  metrics["rollout/tokens_per_s"] = rollout_s > 0 ? generated / rollout_s : 0.0;
  metrics["rollout/rounds"] = rounds;
  metrics["rollout/groups_dropped"] = n_dropped;
  return kept;
}

void GrpoTrainer::add_reference_logprobs(std::vector<ScoredGroup>& groups) {
  if (!reference_ || options_.update.kl_beta <= 0) return;
  std::vector<Episode*> all;
  std::vector<Episode> copies;
  for (auto& g : groups)
    for (auto& e : g.episodes) copies.push_back(e), all.push_back(&e);
  auto ref = recompute_logprobs(*reference_, copies, options_.update.micro_batch_size);
  for (size_t i = 0; i < all.size(); ++i) all[i]->ref_logprob = std::move(ref[i]);
}

void GrpoTrainer::compute_advantages(std::vector<ScoredGroup>& groups, Json& metrics) {
  std::vector<std::optional<double>> rewards;
  std::vector<int64_t> group_ids;
  const bool kl_in_reward = options_.kl_placement == "reward" && options_.update.kl_beta > 0;
  double kl_penalty_sum = 0;
  int64_t n_missing = 0;
  for (size_t gi = 0; gi < groups.size(); ++gi) {
    for (auto& e : groups[gi].episodes) {
      e.group = static_cast<int64_t>(gi);
      std::optional<double> r = e.reward;
      if (!r) ++n_missing;
      if (r && kl_in_reward && !e.ref_logprob.empty()) {
        double kl = 0;
        for (size_t t = static_cast<size_t>(e.n_prompt); t < e.tokens.size(); ++t)
          kl += kl_value(e.old_logprob[t], e.ref_logprob[t], options_.update.kl_estimator);
        kl_penalty_sum += options_.update.kl_beta * kl;
        r = *r - options_.update.kl_beta * kl;
      }
      rewards.push_back(r);
      group_ids.push_back(static_cast<int64_t>(gi));
    }
  }
  auto adv = algo::compute_advantages(rewards, group_ids, options_.advantage);
  size_t k = 0;
  for (auto& g : groups)
    for (auto& e : g.episodes) e.advantage = adv[k++];
  metrics["reward/missing"] = n_missing;
  if (kl_in_reward) metrics["kl/reward_penalty_mean"] = rewards.empty() ? 0.0 : kl_penalty_sum / rewards.size();
}

Json GrpoTrainer::update(std::vector<ScoredGroup>& groups) {
  Json m;
  UpdateOptions uo = options_.update;
  if (options_.kl_placement == "reward") uo.kl_beta = 0;  // the KL is in the reward; still logged
  // Mini-batches are whole groups, in a per-step seeded order.
  std::vector<size_t> order(groups.size());
  std::iota(order.begin(), order.end(), 0);
  Rng rng(mix_seed(options_.seed ^ 0xA5A5A5A5ULL ^ static_cast<uint64_t>(steps_done_)));
  double loss = 0, grad_norm = 0, lr = 0;
  int64_t applied = 0, skipped = 0;
  UpdateStats first;
  bool have_first = false;
  std::vector<UpdateStats> all_stats;
  for (int64_t epoch = 0; epoch < options_.epochs; ++epoch) {
    for (size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[rng.next() % i]);
    for (int64_t mb = 0; mb < options_.mini_batches; ++mb) {
      std::vector<Episode> eps;
      for (size_t j = static_cast<size_t>(mb); j < order.size(); j += static_cast<size_t>(options_.mini_batches))
        for (const auto& e : groups[order[j]].episodes) eps.push_back(e);
      optimizer_->zero_grad();
      UpdateStats st = accumulate_policy_gradients(*policy_.model(), eps, uo);
      if (!have_first) first = st, have_first = true;
      StepResult r;
      if (st.finite) r = optimizer_->step(LrSchedule(options_.lr).lr(optimizer_->step_count()), st.loss);
      if (st.finite && r.applied) {
        ++applied;
        grad_norm = r.grad_norm;
        lr = r.lr;
      } else {
        ++skipped;
        optimizer_->zero_grad();
      }
      loss += st.loss;
      all_stats.push_back(st);
    }
  }
  auto avg = [&](double UpdateStats::*field) {
    double s = 0;
    for (const auto& st : all_stats) s += st.*field;
    return all_stats.empty() ? 0.0 : s / static_cast<double>(all_stats.size());
  };
  m["loss"] = all_stats.empty() ? 0.0 : loss / static_cast<double>(all_stats.size());
  m["policy/loss"] = avg(&UpdateStats::policy_loss);
  m["policy/entropy"] = avg(&UpdateStats::entropy);
  m["policy/clip_frac_low"] = avg(&UpdateStats::clip_frac_low);
  m["policy/clip_frac_high"] = avg(&UpdateStats::clip_frac_high);
  m["policy/clip_frac_dual"] = avg(&UpdateStats::clip_frac_dual);
  m["policy/ratio_mean"] = avg(&UpdateStats::ratio_mean);
  m["policy/approx_kl"] = avg(&UpdateStats::approx_kl);
  m["kl/ref"] = avg(&UpdateStats::kl);
  // Before any update of this step: how far the trainer's log-probs are from the rollout's.
  m["policy/logprob_diff_max"] = have_first ? first.logprob_diff_max : 0.0;
  m["optim/grad_norm"] = grad_norm;
  m["optim/lr"] = lr;
  m["optim/steps_applied"] = applied;
  m["optim/steps_skipped"] = skipped;
  return m;
}

Json GrpoTrainer::step() {
  auto t_step = Clock::now();
  Json m;
  m["step"] = steps_done_ + 1;
  auto groups = collect_and_score(options_.prompts_per_step, m);
  add_reference_logprobs(groups);
  compute_advantages(groups, m);

  // Reward metrics: totals, every component, accuracy, lengths.
  std::vector<double> totals, lengths;
  int64_t n_length = 0, n_correct = 0, n_acc = 0;
  std::vector<GroupScores> all_scores;
  size_t acc_component = 0;
  if (!groups.empty() && !options_.accuracy_reward.empty()) {
    const auto& names = groups[0].scores.names;
    auto it = std::find(names.begin(), names.end(), options_.accuracy_reward);
    check(it != names.end(), "algorithm.accuracy_reward '", options_.accuracy_reward, "' is not a reward name");
    acc_component = static_cast<size_t>(it - names.begin());
  }
  for (const auto& g : groups) {
    all_scores.push_back(g.scores);
    for (size_t i = 0; i < g.episodes.size(); ++i) {
      if (g.totals[i]) totals.push_back(*g.totals[i]);
      lengths.push_back(static_cast<double>(g.episodes[i].n_completion()));
      if (g.episodes[i].finish_reason == "length") ++n_length;
      if (!g.scores.results.empty()) {
        const auto& s = g.scores.results[acc_component][i].score;
        if (s) ++n_acc, n_correct += (*s > 0.5);
      }
    }
  }
  m["reward/mean"] = mean_of(totals);
  m["reward/std"] = std_of(totals);
  for (const auto& cs : component_stats(all_scores)) {
    m["reward/" + cs.name + "/mean"] = cs.mean;
    m["reward/" + cs.name + "/std"] = cs.std;
    m["reward/" + cs.name + "/missing"] = cs.n_missing;
  }
  m["accuracy"] = n_acc ? static_cast<double>(n_correct) / n_acc : 0.0;
  m["completion/length_mean"] = mean_of(lengths);
  m["completion/length_max"] = lengths.empty() ? 0.0 : *std::max_element(lengths.begin(), lengths.end());
  m["completion/length_min"] = lengths.empty() ? 0.0 : *std::min_element(lengths.begin(), lengths.end());
  m["completion/truncated_frac"] = lengths.empty() ? 0.0 : static_cast<double>(n_length) / lengths.size();

  auto t_update = Clock::now();
  m.update(update(groups));
  m["time/update_s"] = since(t_update);
  m["time/step_s"] = since(t_step);
  last_groups_ = std::move(groups);
  ++steps_done_;
  return m;
}

}  // namespace rlf

#include "train/trainer.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <map>
#include <set>
#include <span>

#include "rollout/sampling.h"
#include "train/rank_balance.h"
#include "util/error.h"
#include "util/seed.h"

namespace rlf {

void TrainerOptions::validate() const {
  check(epochs > 0, "algorithm.epochs must be > 0 (got ", epochs, ")");
  check(mini_batches > 0, "algorithm.mini_batches must be > 0 (got ", mini_batches, ")");
  check(micro_batch_size > 0, "algorithm.micro_batch_size must be > 0 (got ", micro_batch_size, ")");
  check(micro_batch_tokens >= 0, "trainer.micro_batch_tokens must be >= 0 (0 = count sequences), got ",
        micro_batch_tokens);
  rlf::validate(optimizer);
  rlf::validate(lr);
}

Trainer::Trainer(CausalLM model, std::vector<std::unique_ptr<LossTerm>> terms, TrainerOptions options,
                 Reducer& reducer)
    : model_(std::move(model)),
      terms_(std::move(terms)),
      options_(std::move(options)),
      reducer_(reducer),
      schedule_((options_.validate(), options_.lr)) {
  check(!terms_.empty(), "trainer: no loss terms");
  optimizer_ = std::make_unique<Optimizer>(*model_, options_.optimizer);
}

void Trainer::set_lr_horizon(int64_t total_steps) {
  LrScheduleOptions o = options_.lr;
  o.total_steps = total_steps;
  schedule_ = LrSchedule(o);
  options_.lr = o;
}

bool Trainer::needs_reference() const {
  return std::any_of(terms_.begin(), terms_.end(), [](const auto& t) { return t->needs_reference(); });
}

bool Trainer::logprobs_over_kept_sets() const {
  return std::none_of(terms_.begin(), terms_.end(),
                      [](const auto& t) { return t->needs_entropy() || t->needs_teacher_topk(); });
}

StepLoss Trainer::accumulate(const std::vector<const Episode*>& episodes) {
  StepLoss st;
  // Across ranks, a rank with no episodes still takes part in every reduction.
  if (episodes.empty() && reducer_.world_size() == 1) return st;
  const bool entropy_grad = std::any_of(terms_.begin(), terms_.end(), [](const auto& t) { return t->needs_entropy(); });
  const bool want_logp = std::any_of(terms_.begin(), terms_.end(), [](const auto& t) { return t->needs_logprobs(); });
  const bool want_scores = std::any_of(terms_.begin(), terms_.end(), [](const auto& t) { return t->needs_scores(); });
  const bool want_entropy = want_logp && (entropy_grad || options_.log_entropy);
  const bool want_topk = std::any_of(terms_.begin(), terms_.end(), [](const auto& t) { return t->needs_teacher_topk(); });

  // 1-2. Micro-batches and every term's normaliser over all of them (and all ranks).
  std::vector<MicroBatch> mbs;
  const bool whole_groups = std::any_of(terms_.begin(), terms_.end(), [](const auto& t) { return t->needs_whole_groups(); });
  const int64_t size = options_.micro_batch_size, budget = options_.micro_batch_tokens;
  for (const auto& part : whole_groups ? split_micro_batches_by_group(episodes, size, budget)
                                       : split_micro_batches(episodes, size, budget))
    mbs.push_back(make_micro_batch(part, model_->device(), optimizer_->step_count()));
  const size_t K = terms_.size();
  std::vector<std::vector<torch::Tensor>> weights(mbs.size(), std::vector<torch::Tensor>(K));
  struct Totals {
    double n_tokens = 0, n_sequences = 0;
  };
  // Row k < K: term k's normaliser; row K: the loss weights' sum (n_tokens) over the step.
  std::vector<Totals> totals(K + 1);
  std::vector<std::vector<double>> local_tokens(mbs.size(), std::vector<double>(K, 0.0));
  for (size_t m = 0; m < mbs.size(); ++m) {
    for (size_t k = 0; k < K; ++k) {
      weights[m][k] = terms_[k]->weights(mbs[m]);
      const algo::LossTotals t = algo::count_loss_totals(weights[m][k]);
      local_tokens[m][k] = t.n_tokens;
      totals[k].n_tokens += t.n_tokens;
      totals[k].n_sequences += static_cast<double>(t.n_sequences);
    }
    totals[K].n_tokens += algo::count_loss_totals(mbs[m][Stream::loss_weight]).n_tokens;
  }
  reducer_.sum_fields(totals);
  std::vector<algo::LossTotals> term_totals(K);
  for (size_t k = 0; k < K; ++k) {
    term_totals[k].n_tokens = totals[k].n_tokens;
    term_totals[k].n_sequences = static_cast<int64_t>(totals[k].n_sequences);
    st.weight_total[terms_[k]->name()] = totals[k].n_tokens;
    if (terms_[k]->sums_per_sequence()) st.sequence_total[terms_[k]->name()] = totals[k].n_sequences;
  }
  st.n_tokens = totals[K].n_tokens;

  // Terms that share their weights (the loss weights) and aggregation share
  // one normaliser: their per-token losses are summed, then aggregated once
  // (the same value as one aggregate per term, one pass fewer).
  std::vector<size_t> lead(K);  // the first term of each term's group
  for (size_t k = 0; k < K; ++k) {
    lead[k] = k;
    for (size_t j = 0; j < k; ++j) {
      const auto a = terms_[j]->aggregation(), b = terms_[k]->aggregation();
      const bool same_weights = mbs.empty() || (weights[0][j].is_same(mbs[0][Stream::loss_weight]) &&
                                                weights[0][k].is_same(mbs[0][Stream::loss_weight]));
      if (lead[j] == j && same_weights && a.mode == b.mode && a.max_tokens == b.max_tokens) {
        lead[k] = j;
        break;
      }
    }
  }
  // The kl term writes the kl/ref metric itself, sparing the trainer computing it again.
  const bool kl_from_terms = std::any_of(terms_.begin(), terms_.end(), [](const auto& t) { return t->name() == "kl"; });

  // 3. Forward, terms, backward, per micro-batch.
  for (size_t m = 0; m < mbs.size(); ++m) {
    const MicroBatch& mb = mbs[m];
    if (std::all_of(local_tokens[m].begin(), local_tokens[m].end(), [](double n) { return n == 0; })) continue;
    torch::Tensor logp, entropy, scores, teacher_buckets;
    // No term reads a column before the first weighted one (the prompts): no logits there.
    const int64_t from = want_logp ? first_weighted_column(mb[Stream::loss_weight], weights[m]) : 0;
    const MicroBatchForward fw = forward_for_heads(*model_, mb, from);
    const int64_t head_from = fw.padding_free() ? 0 : from;  // padding-free: the heads hold columns >= from only
    // Sampling-mask replay: log-probs renormalised over each token's kept set, as old_logprob is.
    const torch::Tensor keep = mb.has(Stream::sampling_mask_id) ? fw.from_grid(mb[Stream::sampling_mask_id]) : torch::Tensor();
    if (want_topk && mb.has(Stream::teacher_topk_id))
      logp = model_->token_logprobs_selected(fw.hidden, fw.targets, fw.from_grid(mb[Stream::teacher_topk_id]),
                                             &teacher_buckets, want_entropy ? &entropy : nullptr, entropy_grad,
                                             head_from, keep);
    else if (want_entropy)
      std::tie(logp, entropy) = model_->token_logprobs_entropy(fw.hidden, fw.targets, entropy_grad, head_from, keep);
    else if (want_logp) logp = model_->token_logprobs(fw.hidden, fw.targets, head_from, keep);
    if (want_scores) scores = model_->scores(fw.hidden);
    for (torch::Tensor* t : {&logp, &entropy, &scores, &teacher_buckets})
      if (t->defined()) *t = fw.to_grid(*t);
    if (logp.defined()) {
      torch::NoGradGuard ng;
      // On-policy tokens only: refinements were sampled in another context, replayed
      // episodes by older weights; their stored log-probs are not this forward's.
      const auto on = (mb[Stream::loss_weight] > 0) & (mb[Stream::off_policy] == 0);
      st.logprob_diff_max =
          std::max(st.logprob_diff_max, ((logp.detach() - mb[Stream::old_logprob]).abs() * on).max().item<double>());
      if (mb.has(Stream::ref_logprob) && !kl_from_terms) {
        auto kl = algo::kl_estimate(logp.detach(), mb[Stream::ref_logprob], mb[Stream::loss_weight],
                                    options_.kl_metric_estimator);
        st.kl_ref_sum += (kl * mb[Stream::loss_weight]).sum().item<double>();
      }
      if (entropy.defined()) st.entropy_sum += (entropy.detach() * mb[Stream::loss_weight]).sum().item<double>();
    }
    TermInput in{.mb = mb, .logp = logp, .entropy = entropy, .scores = scores, .teacher_buckets = teacher_buckets};
    std::vector<torch::Tensor> group_sum(K);  // per lead term: the summed per-token losses of its group
    std::vector<double> parts(K, 0.0);
    for (size_t k = 0; k < K; ++k) {
      TermSums sums;
      auto per_token = terms_[k]->per_token(in, sums);
      for (const auto& [name, v] : sums) st.sums[name] += v, st.sum_owner[name] = terms_[k]->name();
      if (sums.count("kl/term")) st.kl_ref_sum += sums.at("kl/term");
      if (terms_[k]->coef() != 1.0) per_token = per_token * terms_[k]->coef();
      {
        torch::NoGradGuard ng;  // each term's own share, for the metrics
        parts[k] = algo::aggregate_loss(per_token.detach(), weights[m][k], term_totals[k], terms_[k]->aggregation())
                       .item<double>();
      }
      torch::Tensor& g = group_sum[lead[k]];
      g = g.defined() ? g + per_token : per_token;
    }
    torch::Tensor loss;
    for (size_t k = 0; k < K; ++k) {
      if (lead[k] != k) continue;
      auto agg = algo::aggregate_loss(group_sum[k], weights[m][k], term_totals[k], terms_[k]->aggregation());
      loss = loss.defined() ? loss + agg : agg;
    }
    const double loss_value = loss.item<double>();
    if (!std::isfinite(loss_value)) {
      st.finite = false;
      return st;
    }
    loss.backward();
    st.loss += loss_value;
    for (size_t k = 0; k < K; ++k) st.term_loss["loss/" + terms_[k]->name()] += parts[k];
  }
  return st;
}

namespace {

// Sums (and maxima) of one optimiser step's metrics over the ranks: every
// rank ends with the global values. Ranks that ran no micro-batch of a term
// lack its keys, so the key sets are merged first.
void reduce_step_loss(StepLoss& st, Reducer& reducer) {
  if (reducer.world_size() == 1) return;
  std::string keys;
  for (const auto& [k, v] : st.term_loss) keys += "L" + k + '\x1e';
  for (const auto& [k, v] : st.sums) keys += "S" + k + '\x1f' + st.sum_owner.at(k) + '\x1e';
  std::set<std::string> all;
  for (const std::string& part : reducer.all_gather(keys))
    for (size_t at = 0, end; (end = part.find('\x1e', at)) != std::string::npos; at = end + 1)
      all.insert(part.substr(at, end - at));
  std::vector<double> v;
  for (const std::string& k : all) {
    if (k[0] == 'L') v.push_back(st.term_loss.count(k.substr(1)) ? st.term_loss.at(k.substr(1)) : 0.0);
    else v.push_back(st.sums.count(k.substr(1, k.find('\x1f') - 1)) ? st.sums.at(k.substr(1, k.find('\x1f') - 1)) : 0.0);
  }
  v.push_back(st.kl_ref_sum);
  v.push_back(st.entropy_sum);
  reducer.sum(v);
  size_t i = 0;
  for (const std::string& k : all) {
    if (k[0] == 'L') {
      st.term_loss[k.substr(1)] = v[i++];
    } else {
      const size_t sep = k.find('\x1f');
      st.sums[k.substr(1, sep - 1)] = v[i++];
      st.sum_owner[k.substr(1, sep - 1)] = k.substr(sep + 1);
    }
  }
  st.kl_ref_sum = v[i++];
  st.entropy_sum = v[i++];
  double mx = st.logprob_diff_max;
  reducer.max(std::span<double>(&mx, 1));
  st.logprob_diff_max = mx;
}

// How evenly one update's optimiser steps spread their tokens over the ranks.
struct RankTokens {
  double imbalance_sum = 0;  // over optimiser steps: the largest rank's tokens / the mean rank's
  int64_t steps = 0;
  void add(double local_tokens, Reducer& reducer) {
    if (reducer.world_size() == 1) return;
    double total = local_tokens, most = local_tokens;
    reducer.sum(std::span<double>(&total, 1));
    reducer.max(std::span<double>(&most, 1));
    if (total <= 0) return;
    imbalance_sum += most / (total / static_cast<double>(reducer.world_size()));
    ++steps;
  }
  double mean_imbalance() const { return steps ? imbalance_sum / static_cast<double>(steps) : 1.0; }
};

}  // namespace

std::vector<const Episode*> Trainer::mini_batch_episodes(const std::map<int64_t, std::vector<const Episode*>>& groups,
                                                         const std::vector<int64_t>& order, int64_t mb,
                                                         bool balance) const {
  std::vector<const std::vector<const Episode*>*> members;
  std::vector<GroupLoad> loads;
  for (size_t j = static_cast<size_t>(mb); j < order.size(); j += static_cast<size_t>(options_.mini_batches))
    if (auto it = groups.find(order[j]); it != groups.end()) {
      members.push_back(&it->second);
      GroupLoad g{.slot = order[j], .tokens = 0};
      for (const Episode* e : it->second) g.tokens += static_cast<int64_t>(e->tokens.size());
      loads.push_back(g);
    }
  const std::vector<int64_t> owner =
      balance ? assign_groups_to_ranks(loads, reducer_.world_size()) : std::vector<int64_t>(loads.size(), reducer_.rank());
  std::vector<const Episode*> eps;
  for (size_t g = 0; g < members.size(); ++g)
    if (owner[g] == reducer_.rank()) eps.insert(eps.end(), members[g]->begin(), members[g]->end());
  return eps;
}

Json Trainer::update(const std::vector<Episode>& episodes, int64_t step_index) {
  // Whole groups by their id (Episode::group: the group's slot in the step,
  // the same across ranks); episodes with nothing to train on are left out.
  // The mini-batches are a seeded permutation of the slots 0..G-1 (G over
  // every rank), so each rank takes its part of the same global mini-batch.
  // Balanced across ranks: every rank holds every rank's episodes, and trains its share of each mini-batch.
  const bool balance = options_.balance_ranks && reducer_.world_size() > 1;
  const std::vector<Episode> gathered = balance ? gather_episodes(episodes, reducer_) : std::vector<Episode>();
  std::map<int64_t, std::vector<const Episode*>> groups;
  double n_slots = 0;
  for (const Episode& e : balance ? gathered : episodes) {
    if (e.tokens.size() < 2 || e.n_policy_tokens() == 0) continue;
    check(e.group >= 0, "trainer: an episode has a negative group id (", e.group, ")");
    groups[e.group].push_back(&e);
    n_slots = std::max(n_slots, static_cast<double>(e.group + 1));
  }
  reducer_.max(std::span<double>(&n_slots, 1));
  std::vector<int64_t> order(static_cast<size_t>(n_slots));
  std::iota(order.begin(), order.end(), 0);
  Rng rng(mix_seed(derive_seed(options_.seed, SeedStream::MiniBatchOrder) ^ static_cast<uint64_t>(step_index)));

  RankTokens balance_stats;
  double loss = 0, grad_norm = 0, lr = 0, logprob_diff_first = 0;
  int64_t applied = 0, skipped = 0, n_steps = 0;
  bool have_first = false;
  std::map<std::string, double> means;  // summed over optimiser steps, averaged below
  std::vector<torch::Tensor> params;
  for (auto& p : model_->parameters())
    if (p.requires_grad()) params.push_back(p);
  for (int64_t epoch = 0; epoch < options_.epochs; ++epoch) {
    for (size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[rng.next() % i]);
    for (int64_t mb = 0; mb < options_.mini_batches; ++mb) {
      const std::vector<const Episode*> eps = mini_batch_episodes(groups, order, mb, balance);
      double local_tokens = 0;
      for (const Episode* e : eps) local_tokens += static_cast<double>(e->tokens.size());
      balance_stats.add(local_tokens, reducer_);
      double n_eps = static_cast<double>(eps.size());
      reducer_.sum(std::span<double>(&n_eps, 1));  // empty on every rank: no optimiser step
      if (n_eps == 0) continue;
      optimizer_->zero_grad();
      StepLoss st = accumulate(eps);
      struct {
        double n_nonfinite, loss;
      } flags{.n_nonfinite = st.finite ? 0.0 : 1.0, .loss = st.loss};
      reducer_.sum_fields(flags);  // a NaN anywhere skips the step everywhere
      const bool finite = flags.n_nonfinite == 0.0;
      st.loss = flags.loss;
      reduce_step_loss(st, reducer_);
      if (!have_first) logprob_diff_first = st.logprob_diff_max, have_first = true;
      StepResult r;
      if (finite) {
        reducer_.sum_gradients(params);
        r = optimizer_->step(schedule_.lr(optimizer_->step_count()), flags.loss);
      }
      if (finite && r.applied) {
        ++applied;
        grad_norm = r.grad_norm;
        lr = r.lr;
        if (after_step_) after_step_();
      } else {
        ++skipped;
        optimizer_->zero_grad();
      }
      ++n_steps;
      loss += st.loss;
      for (const auto& [name, v] : st.term_loss) means[name] += v;
      // Term diagnostics: sums over the step divided by the term's weight total.
      for (const auto& [name, v] : st.sums) {
        const std::string& owner = st.sum_owner.at(name);
        const double total = st.sequence_total.count(owner) ? st.sequence_total.at(owner) : st.weight_total.at(owner);
        means[name] += total > 0 ? v / total : 0.0;
      }
      means["kl/ref"] += st.n_tokens > 0 ? st.kl_ref_sum / st.n_tokens : 0.0;
      means["policy/entropy"] += st.n_tokens > 0 ? st.entropy_sum / st.n_tokens : 0.0;
    }
  }
  Json m;
  const double n = std::max<int64_t>(1, n_steps);
  m["loss"] = n_steps ? loss / n : 0.0;
  for (const auto& [name, v] : means) m[name] = v / n;
  if (!options_.log_entropy && !std::any_of(terms_.begin(), terms_.end(), [](const auto& t) { return t->needs_entropy(); }))
    m.erase("policy/entropy");
  // A model trained without token log-probs (a reward model) has no KL to a reference.
  if (std::none_of(terms_.begin(), terms_.end(), [](const auto& t) { return t->needs_logprobs(); })) m.erase("kl/ref");
  // Before any update of this step: how far the trainer's log-probs are from the rollout's.
  if (options_.log_rollout_agreement) m["policy/logprob_diff_max"] = logprob_diff_first;
  if (reducer_.world_size() > 1) m["dist/token_imbalance"] = balance_stats.mean_imbalance();
  m["optim/grad_norm"] = grad_norm;
  m["optim/lr"] = lr;
  m["optim/steps_applied"] = applied;
  m["optim/steps_skipped"] = skipped;
  return m;
}

}  // namespace rlf

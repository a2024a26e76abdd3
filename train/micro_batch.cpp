#include "train/micro_batch.h"

#include <algorithm>
#include <cmath>

#include "algorithms/distill_divergence.h"
#include "util/error.h"

namespace rlf {

namespace {

// MicroBatch::teacher_topk_ids / teacher_topk_logp from the episodes' Episode::teacher_topk_* (column t: token t + 1).
void add_teacher_topk(MicroBatch& mb, const std::vector<const Episode*>& eps, int64_t T, torch::Device device) {
  int64_t k = 0;
  for (const Episode* e : eps)
    if (!e->teacher_topk_id.empty()) k = static_cast<int64_t>(e->teacher_topk_id.size() / e->tokens.size());
  if (k == 0) return;
  const int64_t B = static_cast<int64_t>(eps.size());
  std::vector<int64_t> ids(static_cast<size_t>(B * T * k));
  std::vector<float> lp(static_cast<size_t>(B * T * (k + 1)), -std::log(static_cast<float>(k + 1)));
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int64_t>(i) % k;
  for (int64_t b = 0; b < B; ++b) {
    const Episode& e = *eps[b];
    if (e.teacher_topk_id.empty()) continue;
    const int64_t L = static_cast<int64_t>(e.tokens.size()) - 1;
    check(e.teacher_topk_id.size() == e.tokens.size() * static_cast<size_t>(k) &&
              e.teacher_topk_logprob.size() == e.tokens.size() * static_cast<size_t>(k + 1),
          "the episodes of a micro-batch must share distill.top_k, with k ids and k + 1 log-probs per token");
    for (int64_t t = 0; t < L; ++t) {
      std::copy_n(e.teacher_topk_id.begin() + (t + 1) * k, k, ids.begin() + (b * T + t) * k);
      std::copy_n(e.teacher_topk_logprob.begin() + (t + 1) * (k + 1), k + 1, lp.begin() + (b * T + t) * (k + 1));
    }
  }
  mb.teacher_topk_ids = torch::from_blob(ids.data(), {B, T, k}, torch::kInt64).to(device, false, true);
  mb.teacher_topk_logp = torch::from_blob(lp.data(), {B, T, k + 1}, torch::kFloat32).to(device, false, true);
}

}  // namespace

MicroBatch make_micro_batch(const std::vector<const Episode*>& eps, torch::Device device, int64_t current_version) {
  check(!eps.empty(), "make_micro_batch: no episodes");
  const int64_t B = static_cast<int64_t>(eps.size());
  int64_t T = 1;
  for (const Episode* e : eps) {
    check(e->tokens.size() >= 2, "an episode needs at least two tokens");
    check(e->loss_weight.size() == e->tokens.size() && e->old_logprob.size() == e->tokens.size(),
          "an episode's loss_weight/old_logprob must have one entry per token");
    check(e->advantage.empty() || e->advantage.size() == e->tokens.size(),
          "an episode's advantage must have one entry per token");
    T = std::max<int64_t>(T, static_cast<int64_t>(e->tokens.size()) - 1);
  }
  const bool has_ref = std::all_of(eps.begin(), eps.end(), [](const Episode* e) { return !e->ref_logprob.empty(); });
  const bool has_adv = std::any_of(eps.begin(), eps.end(), [](const Episode* e) { return !e->advantage.empty(); });
  const bool has_teacher = std::any_of(eps.begin(), eps.end(), [](const Episode* e) { return !e->teacher_logprob.empty(); });
  const bool has_value = std::any_of(eps.begin(), eps.end(), [](const Episode* e) { return !e->value_target.empty(); });
  const bool has_behaviour =
      std::any_of(eps.begin(), eps.end(), [](const Episode* e) { return !e->behaviour_logprob.empty(); });
  const bool has_shaped = std::any_of(eps.begin(), eps.end(),
                                      [](const Episode* e) { return e->source == EpisodeSource::Refinement; });
  std::vector<int64_t> ids(B * T, 0), tgt(B * T, 0), pos(B * T, 0);
  std::vector<uint8_t> valid(B * T, 0);
  std::vector<float> weight(B * T, 0), old(B * T, 0), ref(has_ref ? B * T : 0, 0), adv(has_adv ? B * T : 0, 0),
      off(B * T, 0), shaped(has_shaped ? B * T : 0, 0), teacher(has_teacher ? B * T : 0, 0),
      teacher_mask(has_teacher ? B * T : 0, 0), old_value(has_value ? B * T : 0, 0), returns(has_value ? B * T : 0, 0),
      value_mask(has_value ? B * T : 0, 0), behaviour(has_behaviour ? B * T : 0, 0);
  for (int64_t b = 0; b < B; ++b) {
    const Episode& e = *eps[b];
    const int64_t L = static_cast<int64_t>(e.tokens.size()) - 1;
    for (int64_t t = 0; t < T; ++t) {
      const int64_t k = b * T + t;
      pos[k] = t;
      if (t >= L) continue;
      ids[k] = e.tokens[t];
      tgt[k] = e.tokens[t + 1];
      valid[k] = 1;
      weight[k] = e.loss_weight[t + 1];
      old[k] = e.old_logprob[t + 1];
      if (has_behaviour) {
        check(e.behaviour_logprob.empty() || e.behaviour_logprob.size() == e.tokens.size(),
              "an episode's behaviour_logprob must have one entry per token");
        behaviour[k] = e.behaviour_logprob.empty() ? std::nanf("") : e.behaviour_logprob[t + 1];
      }
      if (has_ref) ref[k] = e.ref_logprob[t + 1];
      if (has_adv && !e.advantage.empty()) adv[k] = e.advantage[t + 1];
      const bool stale = current_version >= 0 && !e.policy_version.empty() && e.policy_version[t + 1] >= 0 &&
                         e.policy_version[t + 1] < current_version;
      off[k] = (!e.on_policy || stale) ? 1.0f : 0.0f;
      if (has_shaped) shaped[k] = e.source == EpisodeSource::Refinement ? 1.0f : 0.0f;
      if (has_teacher && !e.teacher_logprob.empty()) {
        check(e.teacher_logprob.size() == e.tokens.size(), "an episode's teacher_logprob must have one entry per token");
        teacher[k] = e.teacher_logprob[t + 1];
        teacher_mask[k] = 1.0f;
      }
      if (has_value && !e.value_target.empty()) {
        check(e.value_target.size() == e.tokens.size() && e.value.size() == e.tokens.size(),
              "an episode's value/value_target must have one entry per token");
        // A NaN target (turn-level values: tokens after a turn's first) is no target.
        const bool target = std::isfinite(e.value_target[t + 1]);
        old_value[k] = e.value[t + 1];
        returns[k] = target ? e.value_target[t + 1] : 0.0f;
        value_mask[k] = target ? 1.0f : 0.0f;
      }
    }
  }
  auto i64 = torch::TensorOptions().dtype(torch::kInt64);
  auto f32 = torch::TensorOptions().dtype(torch::kFloat32);
  auto put = [&](std::vector<float>& v) { return torch::from_blob(v.data(), {B, T}, f32).to(device, false, true); };
  MicroBatch mb;
  mb.input_ids = torch::from_blob(ids.data(), {B, T}, i64).to(device, /*non_blocking=*/false, /*copy=*/true);
  mb.targets = torch::from_blob(tgt.data(), {B, T}, i64).to(device, false, true);
  mb.positions = torch::from_blob(pos.data(), {B, T}, i64).to(device, false, true);
  mb.key_mask = torch::from_blob(valid.data(), {B, T}, torch::TensorOptions().dtype(torch::kUInt8)).to(device, torch::kBool, false, true);
  mb.weight = put(weight);
  mb.old_logp = put(old);
  if (has_ref) mb.ref_logp = put(ref);
  if (has_behaviour) mb.behaviour_logp = put(behaviour);
  if (has_adv) mb.advantages = put(adv);
  mb.off_policy = put(off);
  if (has_shaped) mb.shaped = put(shaped);
  if (has_teacher) mb.teacher_logp = put(teacher), mb.teacher_mask = put(teacher_mask);
  if (has_teacher) add_teacher_topk(mb, eps, T, device);
  if (has_value) mb.old_value = put(old_value), mb.returns = put(returns), mb.value_mask = put(value_mask);
  size_t K = 0;
  for (const Episode* e : eps) K = std::max(K, e->ratings.size());
  if (K > 0) {
    std::vector<float> r(static_cast<size_t>(B) * K, std::nanf(""));
    for (int64_t b = 0; b < B; ++b) {
      check(eps[b]->ratings.empty() || eps[b]->ratings.size() == K, "the episodes of a micro-batch rate ",
            eps[b]->ratings.size(), " and ", K, " attributes");
      std::copy(eps[b]->ratings.begin(), eps[b]->ratings.end(), r.begin() + static_cast<std::ptrdiff_t>(b * K));
    }
    mb.ratings = torch::from_blob(r.data(), {B, static_cast<int64_t>(K)}, f32).to(device, false, true);
  }
  mb.seq_group = torch::empty({B}, i64);
  mb.seq_reward = torch::empty({B}, torch::kFloat64);
  std::vector<float> correct(B), accuracy(B);
  for (int64_t b = 0; b < B; ++b) {
    mb.seq_group[b] = eps[b]->group;
    mb.seq_reward[b] = eps[b]->reward ? *eps[b]->reward : std::nan("");
    correct[b] = eps[b]->correct ? (*eps[b]->correct ? 1.0f : 0.0f) : std::nanf("");
    accuracy[b] = eps[b]->group_accuracy >= 0 ? static_cast<float>(eps[b]->group_accuracy) : std::nanf("");
  }
  mb.seq_correct = torch::from_blob(correct.data(), {B}, f32).to(device, false, true);
  mb.seq_accuracy = torch::from_blob(accuracy.data(), {B}, f32).to(device, false, true);
  mb.n_sequences = B;
  return mb;
}

std::vector<std::vector<const Episode*>> split_micro_batches(const std::vector<const Episode*>& episodes, int64_t size) {
  check(size > 0, "micro-batch size must be > 0 (got ", size, ")");
  std::vector<size_t> order(episodes.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return episodes[a]->tokens.size() < episodes[b]->tokens.size(); });
  std::vector<std::vector<const Episode*>> out;
  for (size_t i = 0; i < order.size(); i += static_cast<size_t>(size)) {
    std::vector<const Episode*> mb;
    for (size_t j = i; j < std::min(order.size(), i + static_cast<size_t>(size)); ++j) mb.push_back(episodes[order[j]]);
    out.push_back(std::move(mb));
  }
  return out;
}

std::vector<std::vector<const Episode*>> split_micro_batches_by_group(const std::vector<const Episode*>& episodes,
                                                                      int64_t size) {
  check(size > 0, "micro-batch size must be > 0 (got ", size, ")");
  std::vector<int64_t> ids;
  std::vector<std::vector<const Episode*>> groups;
  std::vector<size_t> longest;
  for (const Episode* e : episodes) {
    auto it = std::find(ids.begin(), ids.end(), e->group);
    const size_t g = static_cast<size_t>(it - ids.begin());
    if (it == ids.end()) ids.push_back(e->group), groups.emplace_back(), longest.push_back(0);
    groups[g].push_back(e);
    longest[g] = std::max(longest[g], e->tokens.size());
  }
  std::vector<size_t> order(groups.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return longest[a] < longest[b]; });
  std::vector<std::vector<const Episode*>> out;
  std::vector<const Episode*> cur;
  for (size_t g : order) {
    if (!cur.empty() && cur.size() + groups[g].size() > static_cast<size_t>(size)) out.push_back(std::move(cur)), cur.clear();
    cur.insert(cur.end(), groups[g].begin(), groups[g].end());
  }
  if (!cur.empty()) out.push_back(std::move(cur));
  return out;
}

namespace {

// Runs `per_position` ([B, T] fp32 from one micro-batch's hidden states,
// position t predicting token t + 1) over every episode, no gradient:
// out[i][t] = its value at position t - 1 for t >= 1 (out[i][0] = 0).
template <class F>
std::vector<std::vector<float>> per_token_pass(CausalLMImpl& model, const std::vector<const Episode*>& episodes,
                                               int64_t micro_batch_size, F per_position) {
  check(micro_batch_size > 0, "micro-batch size must be > 0 (got ", micro_batch_size, ")");
  torch::NoGradGuard ng;
  std::vector<std::vector<float>> out(episodes.size());
  for (size_t i0 = 0; i0 < episodes.size(); i0 += static_cast<size_t>(micro_batch_size)) {
    std::vector<const Episode*> mb_eps;
    for (size_t i = i0; i < std::min(episodes.size(), i0 + static_cast<size_t>(micro_batch_size)); ++i)
      mb_eps.push_back(episodes[i]);
    MicroBatch mb = make_micro_batch(mb_eps, model.device());
    auto hidden = model.forward_hidden(mb.input_ids, mb.positions, nullptr, mb.key_mask);
    torch::Tensor values = per_position(hidden, mb).to(torch::kCPU, torch::kFloat32).contiguous();
    const int64_t T = values.size(1);
    const float* p = values.data_ptr<float>();
    for (size_t b = 0; b < mb_eps.size(); ++b) {
      const Episode& e = *mb_eps[b];
      auto& v = out[i0 + b];
      v.assign(e.tokens.size(), 0.0f);
      for (size_t t = 1; t < e.tokens.size(); ++t) v[t] = p[b * T + static_cast<int64_t>(t) - 1];
    }
  }
  return out;
}

}  // namespace

int64_t first_weighted_column(const torch::Tensor& weight, const std::vector<torch::Tensor>& term_weights) {
  torch::NoGradGuard ng;
  auto any = weight != 0;
  for (const auto& w : term_weights) {
    if (!w.defined() || w.sizes() != weight.sizes()) return 0;
    any = any | (w != 0);
  }
  const auto cols = any.any(0).nonzero();
  return cols.numel() == 0 ? 0 : cols[0][0].item<int64_t>();
}

std::vector<std::vector<float>> recompute_logprobs(CausalLMImpl& model, const std::vector<const Episode*>& episodes,
                                                   int64_t micro_batch_size, LogprobScope scope) {
  return per_token_pass(model, episodes, micro_batch_size, [&](const torch::Tensor& hidden, const MicroBatch& mb) {
    const int64_t from = scope == LogprobScope::FromFirstWeighted ? first_weighted_column(mb.weight) : 0;
    return model.token_logprobs(hidden, mb.targets, from);
  });
}

std::vector<TeacherTopK> teacher_topk(CausalLMImpl& model, const std::vector<const Episode*>& episodes, int64_t k,
                                      int64_t micro_batch_size, std::vector<std::vector<float>>* token_logprobs) {
  check(micro_batch_size > 0, "micro-batch size must be > 0 (got ", micro_batch_size, ")");
  torch::NoGradGuard ng;
  std::vector<TeacherTopK> out(episodes.size());
  if (token_logprobs) token_logprobs->assign(episodes.size(), {});
  for (size_t i0 = 0; i0 < episodes.size(); i0 += static_cast<size_t>(micro_batch_size)) {
    const std::vector<const Episode*> eps(episodes.begin() + static_cast<std::ptrdiff_t>(i0),
                                          episodes.begin() + static_cast<std::ptrdiff_t>(std::min(
                                                                 episodes.size(), i0 + static_cast<size_t>(micro_batch_size))));
    MicroBatch mb = make_micro_batch(eps, model.device());
    const auto hidden = model.forward_hidden(mb.input_ids, mb.positions, nullptr, mb.key_mask);
    const int64_t B = hidden.size(0), T = hidden.size(1), from = first_weighted_column(mb.weight);
    const int64_t chunk = std::max<int64_t>(1, 8192 / B);
    auto ids = torch::zeros({B, T, k}, torch::kInt32), lps = torch::zeros({B, T, k + 1}, torch::kFloat32);
    auto tok = torch::zeros({B, T}, torch::kFloat32);
    for (int64_t t0 = from; t0 < T; t0 += chunk) {
      const int64_t n = std::min(chunk, T - t0);
      const auto lg = model.logits(hidden.narrow(1, t0, n)).to(torch::kFloat32);  // [B, n, V]
      auto [top, lp] = algo::teacher_topk_buckets(lg, k);
      ids.narrow(1, t0, n).copy_(top.to(torch::kCPU, torch::kInt32));
      lps.narrow(1, t0, n).copy_(lp.to(torch::kCPU));
      const auto target = mb.targets.narrow(1, t0, n).unsqueeze(-1);
      tok.narrow(1, t0, n).copy_((lg.gather(-1, target).squeeze(-1) - torch::logsumexp(lg, -1)).to(torch::kCPU));
    }
    for (size_t b = 0; b < eps.size(); ++b) {
      const size_t L = eps[b]->tokens.size(), bk = static_cast<size_t>(k);
      TeacherTopK& o = out[i0 + b];
      o.ids.assign(L * bk, 0), o.logprobs.assign(L * (bk + 1), 0.0f);
      const auto row_ids = ids[static_cast<int64_t>(b)].contiguous();
      const auto row_lp = lps[static_cast<int64_t>(b)].contiguous();
      std::copy_n(row_ids.data_ptr<int32_t>(), (L - 1) * bk, o.ids.begin() + bk);
      std::copy_n(row_lp.data_ptr<float>(), (L - 1) * (bk + 1), o.logprobs.begin() + (bk + 1));
      if (!token_logprobs) continue;
      auto& v = (*token_logprobs)[i0 + b];
      v.assign(L, 0.0f);
      const auto row_tok = tok[static_cast<int64_t>(b)].contiguous();
      std::copy_n(row_tok.data_ptr<float>(), L - 1, v.begin() + 1);
    }
  }
  return out;
}

std::vector<std::vector<float>> recompute_values(CausalLMImpl& critic, const std::vector<const Episode*>& episodes,
                                                 int64_t micro_batch_size, int64_t label) {
  check(critic.config().is_classifier() || critic.has_value_head(),
        "recompute_values: the critic has no score head (neither a classifier nor a causal LM with a value head)");
  const int64_t outputs = critic.has_value_head() ? 1 : critic.config().num_labels;
  check(label >= 0 && label < outputs, "recompute_values: label ", label, " outside the head's ", outputs, " outputs");
  return per_token_pass(critic, episodes, micro_batch_size, [&](const torch::Tensor& hidden, const MicroBatch&) {
    return critic.scores(hidden).select(2, label);
  });
}

}  // namespace rlf

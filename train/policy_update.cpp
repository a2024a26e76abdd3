#include "train/policy_update.h"

#include <algorithm>
#include <cmath>

#include "util/error.h"

namespace rlf {

void UpdateOptions::validate() const {
  check(micro_batch_size > 0, "algorithm.micro_batch_size must be > 0 (got ", micro_batch_size, ")");
  check(kl_beta >= 0, "algorithm.kl_beta must be >= 0 (got ", kl_beta, "; 0 = no reference model)");
  check(std::isfinite(entropy_coef), "algorithm.entropy_coef must be finite");
  loss.validate();
  aggregation.validate();
}

MicroBatch make_micro_batch(const std::vector<const Episode*>& eps, torch::Device device) {
  check(!eps.empty(), "make_micro_batch: no episodes");
  const int64_t B = static_cast<int64_t>(eps.size());
  int64_t T = 1;
  for (const Episode* e : eps) {
    check(e->tokens.size() >= 2, "an episode needs at least two tokens");
    check(e->loss_weight.size() == e->tokens.size() && e->old_logprob.size() == e->tokens.size(),
          "an episode's loss_weight/old_logprob must have one entry per token");
    T = std::max<int64_t>(T, static_cast<int64_t>(e->tokens.size()) - 1);
  }
  const bool has_ref = std::all_of(eps.begin(), eps.end(), [](const Episode* e) { return !e->ref_logprob.empty(); });
  std::vector<int64_t> ids(B * T, 0), tgt(B * T, 0), pos(B * T, 0);
  std::vector<uint8_t> valid(B * T, 0);
  std::vector<float> mask(B * T, 0), old(B * T, 0), ref(has_ref ? B * T : 0, 0), adv(B * T, 0);
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
      mask[k] = e.loss_weight[t + 1];
      old[k] = e.old_logprob[t + 1];
      if (has_ref) ref[k] = e.ref_logprob[t + 1];
      adv[k] = static_cast<float>(e.advantage);
    }
  }
  auto i64 = torch::TensorOptions().dtype(torch::kInt64);
  auto f32 = torch::TensorOptions().dtype(torch::kFloat32);
  MicroBatch mb;
  mb.input_ids = torch::from_blob(ids.data(), {B, T}, i64).to(device, /*non_blocking=*/false, /*copy=*/true);
  mb.targets = torch::from_blob(tgt.data(), {B, T}, i64).to(device, false, true);
  mb.positions = torch::from_blob(pos.data(), {B, T}, i64).to(device, false, true);
  mb.key_mask = torch::from_blob(valid.data(), {B, T}, torch::TensorOptions().dtype(torch::kUInt8)).to(device, torch::kBool, false, true);
  mb.mask = torch::from_blob(mask.data(), {B, T}, f32).to(device, false, true);
  mb.old_logp = torch::from_blob(old.data(), {B, T}, f32).to(device, false, true);
  if (has_ref) mb.ref_logp = torch::from_blob(ref.data(), {B, T}, f32).to(device, false, true);
  mb.advantages = torch::from_blob(adv.data(), {B, T}, f32).to(device, false, true);
  return mb;
}

namespace {

// Splits episode indices into micro-batches of similar length (sorted by
// length so padding stays small), preserving determinism.
std::vector<std::vector<const Episode*>> split(const std::vector<Episode>& episodes, int64_t size) {
  std::vector<size_t> order(episodes.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return episodes[a].tokens.size() < episodes[b].tokens.size(); });
  std::vector<std::vector<const Episode*>> out;
  for (size_t i = 0; i < order.size(); i += static_cast<size_t>(size)) {
    std::vector<const Episode*> mb;
    for (size_t j = i; j < std::min(order.size(), i + static_cast<size_t>(size)); ++j) mb.push_back(&episodes[order[j]]);
    out.push_back(std::move(mb));
  }
  return out;
}

algo::LossTotals step_totals(const std::vector<std::vector<const Episode*>>& batches) {
  algo::LossTotals totals;
  for (const auto& mb : batches) {
    for (const Episode* e : mb) {
      double w = 0;
      for (size_t t = 1; t < e->loss_weight.size(); ++t) w += e->loss_weight[t];
      totals.n_tokens += w;
      if (w > 0) totals.n_sequences += 1;
    }
  }
  return totals;
}

}  // namespace

UpdateStats accumulate_policy_gradients(CausalLMImpl& model, const std::vector<Episode>& episodes,
                                        const UpdateOptions& options) {
  options.validate();
  UpdateStats st;
  if (episodes.empty()) return st;
  auto batches = split(episodes, options.micro_batch_size);
  const algo::LossTotals totals = step_totals(batches);
  if (totals.n_tokens <= 0) return st;
  st.n_tokens = totals.n_tokens;
  double w_policy = 0, w_kl = 0, w_ent = 0, w_clip_lo = 0, w_clip_hi = 0, w_dual = 0, w_ratio = 0, w_akl = 0;
  for (const auto& mb_eps : batches) {
    MicroBatch mb = make_micro_batch(mb_eps, model.device());
    auto hidden = model.forward_hidden(mb.input_ids, mb.positions, nullptr, mb.key_mask);
    auto [logp, entropy] = model.token_logprobs_entropy(hidden, mb.targets, options.entropy_coef != 0);
    const double n_mb = mb.mask.sum().item<double>();
    if (n_mb <= 0) continue;
    {
      torch::NoGradGuard ng;
      auto diff = ((logp.detach() - mb.old_logp).abs() * (mb.mask > 0)).max().item<double>();
      st.logprob_diff_max = std::max(st.logprob_diff_max, diff);
    }
    algo::PolicyLossResult pl = algo::policy_loss(logp, mb.old_logp, mb.advantages, mb.mask, options.loss);
    auto per_token = pl.per_token;
    if (mb.ref_logp.defined()) {
      auto kl = algo::kl_estimate(logp, mb.ref_logp, mb.mask, options.kl_estimator);
      w_kl += (kl.detach() * mb.mask).sum().item<double>();
      if (options.kl_beta > 0) per_token = per_token + options.kl_beta * kl;
    }
    if (options.entropy_coef != 0) per_token = per_token - options.entropy_coef * entropy;
    w_ent += (entropy.detach() * mb.mask).sum().item<double>();
    auto loss = algo::aggregate_loss(per_token, mb.mask, totals, options.aggregation);
    const double loss_value = loss.item<double>();
    if (!std::isfinite(loss_value)) {
      st.finite = false;
      return st;
    }
    loss.backward();
    st.loss += loss_value;
    w_policy += (pl.per_token.detach() * mb.mask).sum().item<double>();
    const auto& s = pl.stats;
    w_clip_lo += s.clip_frac_low * n_mb;
    w_clip_hi += s.clip_frac_high * n_mb;
    w_dual += s.clip_frac_dual * n_mb;
    w_ratio += s.ratio_mean * n_mb;
    w_akl += s.approx_kl * n_mb;
    st.ratio_max = std::max(st.ratio_max, s.ratio_max);
  }
  const double n = totals.n_tokens;
  st.policy_loss = w_policy / n;
  st.kl = w_kl / n;
  st.entropy = w_ent / n;
  st.clip_frac_low = w_clip_lo / n;
  st.clip_frac_high = w_clip_hi / n;
  st.clip_frac_dual = w_dual / n;
  st.ratio_mean = w_ratio / n;
  st.approx_kl = w_akl / n;
  return st;
}

UpdateStats accumulate_sft_gradients(CausalLMImpl& model, const std::vector<Episode>& episodes, int64_t micro_batch_size) {
  check(micro_batch_size > 0, "sft.micro_batch_size must be > 0");
  UpdateStats st;
  auto batches = split(episodes, micro_batch_size);
  const algo::LossTotals totals = step_totals(batches);
  if (totals.n_tokens <= 0) return st;
  st.n_tokens = totals.n_tokens;
  for (const auto& mb_eps : batches) {
    MicroBatch mb = make_micro_batch(mb_eps, model.device());
    auto hidden = model.forward_hidden(mb.input_ids, mb.positions, nullptr, mb.key_mask);
    auto logp = model.token_logprobs(hidden, mb.targets);
    auto loss = -(logp * mb.mask).sum() / totals.n_tokens;
    const double v = loss.item<double>();
    if (!std::isfinite(v)) {
      st.finite = false;
      return st;
    }
    loss.backward();
    st.loss += v;
  }
  st.policy_loss = st.loss;
  return st;
}

std::vector<std::vector<float>> recompute_logprobs(CausalLMImpl& model, const std::vector<Episode>& episodes,
                                                   int64_t micro_batch_size) {
  torch::NoGradGuard ng;
  std::vector<std::vector<float>> out(episodes.size());
  for (size_t i0 = 0; i0 < episodes.size(); i0 += static_cast<size_t>(micro_batch_size)) {
    std::vector<const Episode*> mb_eps;
    for (size_t i = i0; i < std::min(episodes.size(), i0 + static_cast<size_t>(micro_batch_size)); ++i)
      mb_eps.push_back(&episodes[i]);
    MicroBatch mb = make_micro_batch(mb_eps, model.device());
    auto hidden = model.forward_hidden(mb.input_ids, mb.positions, nullptr, mb.key_mask);
    auto lp = model.token_logprobs(hidden, mb.targets).to(torch::kCPU).contiguous();
    const int64_t T = lp.size(1);
    const float* p = lp.data_ptr<float>();
    for (size_t b = 0; b < mb_eps.size(); ++b) {
      const Episode& e = *mb_eps[b];
      auto& v = out[i0 + b];
      v.assign(e.tokens.size(), 0.0f);
      for (size_t t = 1; t < e.tokens.size(); ++t) v[t] = p[b * T + static_cast<int64_t>(t) - 1];
    }
  }
  return out;
}

}  // namespace rlf

#include "rollout/batch_sampler.h"

#include <cmath>
#include <limits>

#include "model/cpu_kernels.h"
#include "util/error.h"

namespace rlf::rollout {

namespace {

// One drawn token of one row.
struct Draw {
  int32_t id = 0;
  float logprob = 0;  // temperature 1, unfiltered
  DrawRecord record;  // what the request records of the draw (GenerationRequest::record_*)
};

// The record of a draw on the sorted path (greedy or filtered) from its row
// of logits `lg` [V], the row's temperature-1 normaliser `lse` and the kept
// set sample_token_id left in `scratch`.
DrawRecord sorted_draw_record(const float* lg, int64_t V, float lse, int32_t id, const GenerationRequest& req,
                              const SamplerScratch& scratch) {
  DrawRecord r;
  const auto& cand = scratch.candidates;
  const size_t kept = scratch.kept;
  double lse_kept = lse;  // the learner's normaliser: the whole vocabulary's, or the kept set's (replay)
  double mx = -std::numeric_limits<double>::infinity();  // the kept set's largest logit
  for (size_t i = 0; i < kept; ++i) mx = std::max(mx, static_cast<double>(cand[i].first));
  if (kept > 0) {
    double sum = 0;
    for (size_t i = 0; i < kept; ++i) sum += std::exp(static_cast<double>(cand[i].first) - mx);
    if (req.record_kept) {
      lse_kept = mx + std::log(sum);
      r.kept_logmass = static_cast<float>(std::min(0.0, lse_kept - lse));
      r.kept_ids.resize(kept);
      for (size_t i = 0; i < kept; ++i) r.kept_ids[i] = cand[i].second;
    }
  }
  if (!req.record_sampler_kl) return r;
  if (kept == 0) {  // greedy: a point mass on the argmax
    r.sampler_kl = static_cast<float>(lse_kept - lg[id]);
    return r;
  }
  // q over the kept set at the request's temperature; p = exp(l - lse_kept).
  const double inv_t = 1.0 / req.params.temperature;
  double z = 0, kl = 0;
  for (size_t i = 0; i < kept; ++i) z += std::exp((cand[i].first - mx) * inv_t);
  for (size_t i = 0; i < kept; ++i) {
    const double log_q = (cand[i].first - mx) * inv_t - std::log(z);
    kl += std::exp(log_q) * (log_q - (cand[i].first - lse_kept));
  }
  r.sampler_kl = static_cast<float>(std::max(0.0, kl));
  return r;
}

// KL(q || p) of a plain tempered row: q = probs (normalised, [V]), p = exp(lg - lse).
float tempered_kl(const float* lg, const float* probs, int64_t V, float lse) {
  double kl = 0;
  for (int64_t i = 0; i < V; ++i)
    if (probs[i] > 0) kl += probs[i] * (std::log(static_cast<double>(probs[i])) - (lg[i] - lse));
  return static_cast<float>(std::max(0.0, kl));
}

// Top-k, top-p or min-p restrict the support: such rows take the sorted path on their logits.
bool has_filters(const SamplingParams& p, int64_t vocab) {
  return (p.top_k > 0 && p.top_k < vocab) || p.top_p < 1 || p.min_p > 0;
}

// Rows drawn on the host by sample_token_id (the sorted path).
bool draws_sorted(const SamplingParams& p, int64_t vocab) { return p.temperature == 0 || has_filters(p, vocab); }

// The temperature-1 normalisers of rows [row0, row0 + n): a non-finite one means corrupt weights.
void check_finite_normalisers(const float* lse, int64_t n, const std::vector<Sequence>& rows, int64_t row0) {
  for (int64_t i = 0; i < n; ++i)
    check(std::isfinite(lse[i]), "the model produced non-finite logits (NaN or Inf) for sequence ",
          rows[row0 + i].request, "/", rows[row0 + i].sample,
          ": its weights are probably corrupt or diverged (check the checkpoint)");
}

// CPU logits: one kernel over the batch (rows in parallel) gives the
// temperature-1 normaliser, and the tempered probabilities when a row draws
// from them (cpu::softmax_rows; else cpu::logsumexp_rows); rows then draw in
// parallel, each from its own generator.
std::vector<Draw> draw_on_host(const torch::Tensor& logits, std::vector<Sequence>& rows, int64_t row0,
                               const std::vector<char>& drawn) {
  const int64_t n = logits.size(0), V = logits.size(1);
  std::vector<float> inv_t(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const double t = rows[row0 + i].req->params.temperature;
    inv_t[i] = t > 0 ? static_cast<float>(1.0 / t) : 1.0f;
  }
  // The tempered probabilities serve only rows drawn from the whole
  // vocabulary; filtered and greedy rows read the logits and the normaliser,
  // which logsumexp_rows gives alone (the same value softmax_rows gives).
  bool need_probs = false;
  for (int64_t i = 0; i < n; ++i) need_probs |= drawn[i] && !draws_sorted(rows[row0 + i].req->params, V);
  auto lse = torch::empty({n}, torch::kFloat32);
  torch::Tensor probs;
  if (need_probs) {
    probs = torch::empty({n, V}, torch::kFloat32);
    cpu::softmax_rows(logits.data_ptr<float>(), inv_t.data(), n, V, lse.data_ptr<float>(), probs.data_ptr<float>());
  } else {
    cpu::logsumexp_rows(logits.data_ptr<float>(), n, V, lse.data_ptr<float>(), nullptr);
  }
  check_finite_normalisers(lse.data_ptr<float>(), n, rows, row0);
  const float* lg = logits.data_ptr<float>();
  const float* pr = need_probs ? probs.data_ptr<float>() : nullptr;
  const float* ls = lse.data_ptr<float>();
  std::vector<Draw> draws(static_cast<size_t>(n));
  cpu::parallel_rows(n, [&](int64_t begin, int64_t end) {
    thread_local SamplerScratch scratch;
    for (int64_t i = begin; i < end; ++i) {
      if (!drawn[i]) continue;
      Sequence& row = rows[row0 + i];
      const SamplingParams& p = row.req->params;
      const bool sorted = draws_sorted(p, V);
      const int32_t id = sorted ? sample_token_id(lg + i * V, V, p, row.rng, scratch)
                                : draw_from_weights(pr + i * V, V, 1.0, row.rng);
      draws[i].id = id, draws[i].logprob = lg[i * V + id] - ls[i];
      if (sorted) draws[i].record = sorted_draw_record(lg + i * V, V, ls[i], id, *row.req, scratch);
      else if (row.req->record_sampler_kl && p.temperature != 1.0)
        draws[i].record.sampler_kl = tempered_kl(lg + i * V, pr + i * V, V, ls[i]);
    }
  });
  return draws;
}

// Plain temperature rows on the device: the first index whose cumulative
// tempered probability exceeds the row's uniform draw `u` (fp64 sums, as
// draw_from_weights scans); rounding that leaves u above the total takes the
// last positive entry. Returns [n, 2] on the CPU: the id and its logit, per row.
torch::Tensor invert_cdf_on_device(const torch::Tensor& logits, std::vector<float>& inv_t, std::vector<double>& u) {
  const int64_t n = logits.size(0), V = logits.size(1);
  const auto dev = logits.device();
  const auto t = torch::from_blob(inv_t.data(), {n, 1}, torch::TensorOptions().dtype(torch::kFloat32)).to(dev);
  const auto probs = torch::softmax(logits * t, -1);
  const auto cdf = probs.to(torch::kFloat64).cumsum(-1);
  const auto uu = torch::from_blob(u.data(), {n, 1}, torch::TensorOptions().dtype(torch::kFloat64)).to(dev);
  auto idx = torch::searchsorted(cdf, uu, /*out_int32=*/false, /*right=*/true);  // [n, 1]
  const auto last_positive =
      ((probs > 0).to(torch::kInt64) * torch::arange(V, torch::TensorOptions().dtype(torch::kInt64).device(dev)))
          .amax({-1}, /*keepdim=*/true);
  idx = torch::where(idx >= V, last_positive, idx);
  return torch::cat({idx.to(torch::kFloat64), logits.gather(1, idx).to(torch::kFloat64)}, 1)
      .to(torch::kCPU)
      .contiguous();
}

// Logits on a GPU (or tensor_sampling): plain temperature rows draw on the
// device with their own uniform draw (one per token, as draw_from_weights);
// greedy and filtered rows copy their logits to the CPU's sorted path.
std::vector<Draw> draw_on_device(const torch::Tensor& logits, std::vector<Sequence>& rows, int64_t row0,
                                 const std::vector<char>& drawn) {
  const int64_t n = logits.size(0), V = logits.size(1);
  std::vector<float> inv_t(static_cast<size_t>(n), 1.0f);
  std::vector<double> u(static_cast<size_t>(n), 0.0);
  std::vector<int64_t> plain, sorted;  // rows drawn on the device / on the CPU
  for (int64_t i = 0; i < n; ++i) {
    if (!drawn[i]) continue;
    Sequence& row = rows[row0 + i];
    const SamplingParams& p = row.req->params;
    if (draws_sorted(p, V)) {
      sorted.push_back(i);
    } else {
      plain.push_back(i);
      inv_t[i] = static_cast<float>(1.0 / p.temperature);
      u[i] = row.rng.uniform();  // draw_from_weights' one draw
    }
  }
  const auto lse = logits.logsumexp(-1).to(torch::kCPU).contiguous();  // [n]
  const float* ls = lse.data_ptr<float>();
  check_finite_normalisers(ls, n, rows, row0);
  std::vector<Draw> draws(static_cast<size_t>(n));
  if (!plain.empty()) {
    const auto picked = invert_cdf_on_device(logits, inv_t, u);  // [n, 2]
    const double* pk = picked.data_ptr<double>();
    torch::Tensor kl;  // KL(tempered || temperature 1) per row, where a plain row records it
    for (int64_t i : plain)
      if (rows[row0 + i].req->record_sampler_kl && inv_t[i] != 1.0f && !kl.defined()) {
        const auto t = torch::from_blob(inv_t.data(), {n, 1}, torch::TensorOptions().dtype(torch::kFloat32))
                           .to(logits.device());
        const auto log_q = torch::log_softmax(logits * t, -1), log_p = torch::log_softmax(logits, -1);
        kl = (log_q.exp() * (log_q - log_p)).sum(-1).clamp_min(0).to(torch::kCPU, torch::kFloat32).contiguous();
      }
    for (int64_t i : plain) {
      const auto chosen = static_cast<float>(pk[2 * i + 1]);
      draws[i].id = static_cast<int32_t>(pk[2 * i]), draws[i].logprob = chosen - ls[i];
      if (kl.defined() && rows[row0 + i].req->record_sampler_kl) draws[i].record.sampler_kl = kl.data_ptr<float>()[i];
    }
  }
  if (!sorted.empty()) {
    const auto sel = torch::tensor(sorted, torch::kInt64).to(logits.device());
    const auto host = logits.index_select(0, sel).to(torch::kCPU).contiguous();
    const float* lg = host.data_ptr<float>();
    SamplerScratch scratch;
    for (size_t k = 0; k < sorted.size(); ++k) {
      const int64_t i = sorted[k];
      Sequence& row = rows[row0 + i];
      const int32_t id = sample_token_id(lg + k * V, V, row.req->params, row.rng, scratch);
      draws[i].id = id, draws[i].logprob = lg[k * V + id] - ls[i];
      draws[i].record = sorted_draw_record(lg + k * V, V, ls[i], id, *row.req, scratch);
    }
  }
  return draws;
}

}  // namespace

void sample_next_tokens(const torch::Tensor& logits, std::vector<Sequence>& rows, int64_t row0,
                        bool tensor_sampling) {
  const int64_t n = logits.size(0);
  std::vector<char> drawn(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) drawn[i] = !rows[row0 + i].push_forced();  // an appended token: nothing drawn
  const bool on_host = logits.is_cpu() && !tensor_sampling;
  const std::vector<Draw> draws =
      on_host ? draw_on_host(logits, rows, row0, drawn) : draw_on_device(logits, rows, row0, drawn);
  for (int64_t i = 0; i < n; ++i)
    if (drawn[i]) rows[row0 + i].push_sampled(draws[i].id, draws[i].logprob, std::move(draws[i].record));
}

}  // namespace rlf::rollout

#include "rollout/batch_sampler.h"

#include <cmath>

#include "model/cpu_kernels.h"
#include "util/error.h"

namespace rlf::rollout {

namespace {

// One drawn token of one row.
struct Draw {
  int32_t id = 0;
  float logprob = 0;  // temperature 1, unfiltered
};

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

// CPU logits: one kernel over the batch (cpu::softmax_rows, rows in
// parallel) gives the temperature-1 normaliser and the tempered
// probabilities; rows then draw in parallel, each from its own generator.
std::vector<Draw> draw_on_host(const torch::Tensor& logits, std::vector<Sequence>& rows, int64_t row0,
                               const std::vector<char>& drawn) {
  const int64_t n = logits.size(0), V = logits.size(1);
  std::vector<float> inv_t(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const double t = rows[row0 + i].req->params.temperature;
    inv_t[i] = t > 0 ? static_cast<float>(1.0 / t) : 1.0f;
  }
  auto lse = torch::empty({n}, torch::kFloat32);
  auto probs = torch::empty({n, V}, torch::kFloat32);
  cpu::softmax_rows(logits.data_ptr<float>(), inv_t.data(), n, V, lse.data_ptr<float>(), probs.data_ptr<float>());
  check_finite_normalisers(lse.data_ptr<float>(), n, rows, row0);
  const float* lg = logits.data_ptr<float>();
  const float* pr = probs.data_ptr<float>();
  const float* ls = lse.data_ptr<float>();
  std::vector<Draw> draws(static_cast<size_t>(n));
  cpu::parallel_rows(n, [&](int64_t begin, int64_t end) {
    thread_local SamplerScratch scratch;
    for (int64_t i = begin; i < end; ++i) {
      if (!drawn[i]) continue;
      Sequence& row = rows[row0 + i];
      const SamplingParams& p = row.req->params;
      const int32_t id = draws_sorted(p, V) ? sample_token_id(lg + i * V, V, p, row.rng, scratch)
                                            : draw_from_weights(pr + i * V, V, 1.0, row.rng);
      draws[i] = {id, lg[i * V + id] - ls[i]};
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
    for (int64_t i : plain) {
      const auto chosen = static_cast<float>(pk[2 * i + 1]);
      draws[i] = {static_cast<int32_t>(pk[2 * i]), chosen - ls[i]};
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
      draws[i] = {id, lg[k * V + id] - ls[i]};
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
    if (drawn[i]) rows[row0 + i].push_sampled(draws[i].id, draws[i].logprob);
}

}  // namespace rlf::rollout

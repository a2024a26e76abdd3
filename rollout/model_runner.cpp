#include "rollout/model_runner.h"

#include "util/error.h"

#include <algorithm>
#include <memory>

namespace rlf::rollout {

torch::Tensor prefill_prompt(CausalLMImpl& model, KVCache& cache, const std::vector<int32_t>& prompt_ids,
                             int64_t row0, int64_t n, bool share) {
  torch::NoGradGuard no_grad;
  const auto device = model.device();
  const int64_t P = static_cast<int64_t>(prompt_ids.size());
  std::vector<int64_t> ids(prompt_ids.begin(), prompt_ids.end());
  auto input = torch::tensor(ids, torch::kInt64).view({1, P}).to(device);
  auto positions = torch::arange(P, torch::TensorOptions().dtype(torch::kInt64).device(device)).view({1, P});
  torch::Tensor hidden;
  if (share) {
    auto prefix = std::make_shared<KVCache>(model.config(), 1, P, model.kv_cache_dtype(), device);
    hidden = model.forward_hidden(input, positions, prefix.get());
    cache.set_prefix(row0, n, std::move(prefix));
  } else {
    cache.set_prefix(row0, n, nullptr);
    KVCache view = cache.rows(row0, 1);
    hidden = model.forward_hidden(input, positions, &view);
    cache.broadcast_prefix(row0, row0 + 1, n - 1, P);
  }
  return model.logits(hidden.narrow(1, P - 1, 1)).to(torch::kFloat32).contiguous().view({1, -1});
}

namespace {

// Prompts [begin, end) of `prompts` in one forward: the logits [end - begin, V].
torch::Tensor prefill_batch(CausalLMImpl& model, KVCache& cache, const std::vector<PromptPrefill>& prompts,
                            size_t begin, size_t end) {
  const auto device = model.device();
  const int64_t k = static_cast<int64_t>(end - begin);
  int64_t T = 0;
  for (size_t i = begin; i < end; ++i) T = std::max<int64_t>(T, static_cast<int64_t>(prompts[i].prompt_ids->size()));
  std::vector<int64_t> ids(static_cast<size_t>(k * T)), last(static_cast<size_t>(k));
  for (int64_t i = 0; i < k; ++i) {
    const std::vector<int32_t>& p = *prompts[begin + i].prompt_ids;
    const int64_t P = static_cast<int64_t>(p.size());
    for (int64_t t = 0; t < T; ++t) ids[i * T + t] = p[std::min(t, P - 1)];  // padding: the last token again
    last[i] = i * T + P - 1;
  }
  auto input = torch::tensor(ids, torch::kInt64).view({k, T}).to(device);
  auto positions = torch::arange(T, torch::TensorOptions().dtype(torch::kInt64).device(device)).repeat({k, 1});
  KVCache scratch(model.config(), k, T, model.kv_cache_dtype(), device);
  const torch::Tensor hidden = model.forward_hidden(input, positions, &scratch);
  const int64_t L = model.config().num_hidden_layers;
  for (int64_t i = 0; i < k; ++i) {
    const PromptPrefill& pp = prompts[begin + i];
    const int64_t P = static_cast<int64_t>(pp.prompt_ids->size());
    // Copies prompt i's positions [0, P) into row `row` of `to`.
    auto copy_into = [&](KVCache& to, int64_t row) {
      for (int64_t l = 0; l < L; ++l) {
        to.keys(l)[row].narrow(1, 0, P).copy_(scratch.keys(l)[i].narrow(1, 0, P));
        to.values(l)[row].narrow(1, 0, P).copy_(scratch.values(l)[i].narrow(1, 0, P));
      }
    };
    if (pp.share) {
      auto prefix = std::make_shared<KVCache>(model.config(), 1, P, model.kv_cache_dtype(), device);
      copy_into(*prefix, 0);
      cache.set_prefix(pp.row0, pp.n, std::move(prefix));
    } else {  // into the group's first row, then to the rest, as prefill_prompt does
      cache.set_prefix(pp.row0, pp.n, nullptr);
      copy_into(cache, pp.row0);
      cache.broadcast_prefix(pp.row0, pp.row0 + 1, pp.n - 1, P);
    }
  }
  const auto at_last = torch::tensor(last, torch::kInt64).to(device);
  const torch::Tensor h = hidden.reshape({k * T, -1}).index_select(0, at_last).unsqueeze(0);  // [1, k, D]
  return model.logits(h).to(torch::kFloat32).contiguous().view({k, -1});
}

}  // namespace

torch::Tensor prefill_prompts(CausalLMImpl& model, KVCache& cache, const std::vector<PromptPrefill>& prompts) {
  check(!prompts.empty(), "prefill_prompts: no prompts");
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> parts;
  size_t begin = 0;
  while (begin < prompts.size()) {
    // As many prompts as fit in kPrefillBatchTokens padded tokens (at least one).
    size_t end = begin + 1;
    int64_t T = static_cast<int64_t>(prompts[begin].prompt_ids->size());
    while (end < prompts.size()) {
      const int64_t t = std::max<int64_t>(T, static_cast<int64_t>(prompts[end].prompt_ids->size()));
      if (t * static_cast<int64_t>(end + 1 - begin) > kPrefillBatchTokens) break;
      T = t, ++end;
    }
    if (end - begin == 1) {
      const PromptPrefill& p = prompts[begin];
      parts.push_back(prefill_prompt(model, cache, *p.prompt_ids, p.row0, p.n, p.share));
    } else {
      parts.push_back(prefill_batch(model, cache, prompts, begin, end));
    }
    begin = end;
  }
  return parts.size() == 1 ? parts[0] : torch::cat(parts, 0);
}

torch::Tensor decode_logits(CausalLMImpl& model, KVCache& cache, const std::vector<Sequence>& rows,
                            double* classifier_s) {
  torch::NoGradGuard no_grad;
  const auto device = model.device();
  const int64_t n = static_cast<int64_t>(rows.size());
  std::vector<int64_t> ids(n), pos(n);
  for (int64_t i = 0; i < n; ++i) {
    ids[i] = rows[i].completion.back();
    pos[i] = rows[i].length() - 1;
  }
  auto input = torch::tensor(ids, torch::kInt64).view({n, 1}).to(device);
  auto positions = torch::tensor(pos, torch::kInt64).view({n, 1}).to(device);
  KVCache view = cache.rows(0, n);
  auto hidden = model.forward_hidden(input, positions, &view);
  const StepClock::Span span(classifier_s);
  return model.logits(hidden).to(torch::kFloat32).contiguous().view({n, -1});
}

}  // namespace rlf::rollout

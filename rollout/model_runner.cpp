#include "rollout/model_runner.h"

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

torch::Tensor decode_logits(CausalLMImpl& model, KVCache& cache, const std::vector<Sequence>& rows) {
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
  return model.logits(hidden).to(torch::kFloat32).contiguous().view({n, -1});
}

}  // namespace rlf::rollout

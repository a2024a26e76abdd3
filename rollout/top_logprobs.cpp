#include "rollout/top_logprobs.h"

#include <algorithm>

namespace rlf::rollout {

void record_top_logprobs(const torch::Tensor& logits, std::vector<Sequence>& rows, int64_t row0) {
  const int64_t n = logits.size(0);
  int64_t k_max = 0;
  for (int64_t i = 0; i < n; ++i)
    if (!rows[row0 + i].just_forced) k_max = std::max(k_max, rows[row0 + i].req->top_logprobs);
  if (k_max == 0) return;
  torch::NoGradGuard no_grad;
  auto lp = torch::log_softmax(logits.to(torch::kFloat32), -1);
  auto [values, indices] = lp.topk(k_max, -1);  // sorted, most likely first
  values = values.to(torch::kCPU).contiguous();
  indices = indices.to(torch::kCPU).to(torch::kInt64).contiguous();
  const float* v = values.data_ptr<float>();
  const int64_t* ix = indices.data_ptr<int64_t>();
  for (int64_t i = 0; i < n; ++i) {
    Sequence& row = rows[row0 + i];
    const int64_t k = row.req->top_logprobs;
    if (k == 0 || row.just_forced) continue;  // a forced token pushed its empty entry already
    std::vector<TokenLogprob> top(static_cast<size_t>(k));
    for (int64_t j = 0; j < k; ++j) top[j] = {static_cast<int32_t>(ix[i * k_max + j]), v[i * k_max + j]};
    row.top.push_back(std::move(top));
  }
}

}  // namespace rlf::rollout

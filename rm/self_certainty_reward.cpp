#include "rm/self_certainty_reward.h"

#include <cmath>

#include "algorithms/entropy.h"
#include "rewards/reward_shaping.h"
#include "util/error.h"

namespace rlf {

SelfCertaintyReward::SelfCertaintyReward(std::shared_ptr<CausalLM> model, SelfCertaintyOptions options)
    : model_(std::move(model)), options_(std::move(options)) {
  check(model_ != nullptr, "self_certainty: no model slot");
  check(options_.micro_batch_size > 0, "option 'micro_batch_size' must be > 0 (got ", options_.micro_batch_size, ")");
  check(options_.normalize == "none" || options_.normalize == "group",
        "option 'normalize' must be \"none\" or \"group\" (got \"", options_.normalize, "\")");
}

std::vector<RewardResult> SelfCertaintyReward::score(const RewardGroup& group) {
  torch::NoGradGuard ng;
  check(*model_ && !(*model_)->config().is_classifier(), "self_certainty: needs the policy, a causal LM");
  CausalLMImpl& model = **model_;
  const size_t n = group.samples.size();
  std::vector<RewardResult> out(n);
  std::vector<size_t> todo;
  for (size_t i = 0; i < n; ++i) {
    const RewardSample& s = group.samples[i];
    if (s.prompt_ids.empty() || s.completion_ids.empty()) {
      out[i].missing_reason = "self_certainty: no token ids (prompt and completion) to score";
      continue;
    }
    todo.push_back(i);
  }
  const int64_t limit = model.config().max_position_embeddings;
  for (size_t k0 = 0; k0 < todo.size(); k0 += static_cast<size_t>(options_.micro_batch_size)) {
    const size_t k1 = std::min(todo.size(), k0 + static_cast<size_t>(options_.micro_batch_size));
    int64_t T = 1;
    for (size_t k = k0; k < k1; ++k) {
      const RewardSample& s = group.samples[todo[k]];
      T = std::max<int64_t>(T, static_cast<int64_t>(s.prompt_ids.size() + s.completion_ids.size()) - 1);
    }
    T = std::min(T, limit);
    const int64_t B = static_cast<int64_t>(k1 - k0);
    std::vector<int64_t> ids(B * T, 0), pos(B * T, 0);
    std::vector<uint8_t> valid(B * T, 0);
    std::vector<float> mask(B * T, 0);
    for (int64_t b = 0; b < B; ++b) {
      const RewardSample& s = group.samples[todo[k0 + b]];
      std::vector<int32_t> seq = s.prompt_ids;
      seq.insert(seq.end(), s.completion_ids.begin(), s.completion_ids.end());
      const int64_t np = static_cast<int64_t>(s.prompt_ids.size());
      for (int64_t t = 0; t < T && t + 1 < static_cast<int64_t>(seq.size()); ++t) {
        ids[b * T + t] = seq[t];
        pos[b * T + t] = t;
        valid[b * T + t] = 1;
        // Position t predicts token t + 1: count it when that token is a completion token the policy wrote.
        const int64_t c = t + 1 - np;
        const bool policy = c >= 0 && (s.policy_mask.empty() || s.policy_mask[static_cast<size_t>(c)] != 0);
        mask[b * T + t] = policy ? 1.0f : 0.0f;
      }
    }
    const auto dev = model.device();
    auto input = torch::from_blob(ids.data(), {B, T}, torch::kInt64).to(dev, false, true);
    auto positions = torch::from_blob(pos.data(), {B, T}, torch::kInt64).to(dev, false, true);
    auto key_mask = torch::from_blob(valid.data(), {B, T}, torch::kUInt8).to(dev, torch::kBool, false, true);
    auto m = torch::from_blob(mask.data(), {B, T}, torch::kFloat32).to(dev, false, true);
    auto hidden = model.forward_hidden(input, positions, nullptr, key_mask);
    auto sc = algo::self_certainty(model.logits(hidden), m).to(torch::kCPU).contiguous();
    for (int64_t b = 0; b < B; ++b) {
      const double v = sc[b].item<double>();
      RewardResult& r = out[todo[k0 + b]];
      if (std::isfinite(v)) {
        r.score = v;
        r.explanation = "self-certainty " + std::to_string(v);
      } else {
        r.missing_reason = "self_certainty: no policy token within the model's context";
      }
    }
  }
  if (options_.normalize == "group") standardize_in_group(out);
  return out;
}

RewardFactories self_certainty_factories(std::shared_ptr<CausalLM> policy) {
  return {{"self_certainty", [policy](OptionReader& reader) -> std::unique_ptr<Reward> {
             SelfCertaintyOptions o;
             o.micro_batch_size = reader.get_int("micro_batch_size", o.micro_batch_size);
             o.normalize = reader.get_string("normalize", o.normalize);
             reader.finish();
             return with_context(reader.context(), [&] { return std::make_unique<SelfCertaintyReward>(policy, o); });
           }}};
}

}  // namespace rlf

#include "train/heldout_kl.h"

#include <algorithm>

#include "algorithms/distill_divergence.h"
#include "eval/evaluator.h"
#include "train/micro_batch.h"
#include "util/error.h"

namespace rlf {

namespace {

// The policy's completions of `prompts` as episodes: loss weight 1 on the completion's tokens.
std::vector<Episode> sampled_episodes(Policy& policy, const std::vector<PromptExample>& prompts, RewardSet& rewards,
                                      const HeldoutKlOptions& options) {
  EvalOptions o;
  o.n_samples = 1;
  o.temperature = 1.0;
  o.seed = options.seed;
  o.max_new_tokens = options.max_new_tokens;
  o.max_batch_rows = options.max_batch_rows;
  o.add_special_tokens = options.add_special_tokens;
  o.accuracy_reward = options.accuracy_reward;
  const EvalResult r = evaluate(policy, prompts, rewards, o);
  std::vector<Episode> out;
  for (const PromptResult& p : r.prompts) {
    Episode e;
    e.tokens = policy.tokenizer->encode(p.prompt, options.add_special_tokens);
    e.n_prompt = static_cast<int64_t>(e.tokens.size());
    const auto completion = policy.tokenizer->encode(p.samples.at(0).text, false);
    if (completion.empty() || e.tokens.empty()) continue;
    e.tokens.insert(e.tokens.end(), completion.begin(), completion.end());
    e.loss_weight.assign(e.tokens.size(), 0.0f);
    std::fill(e.loss_weight.begin() + e.n_prompt, e.loss_weight.end(), 1.0f);
    e.old_logprob.assign(e.tokens.size(), 0.0f);
    out.push_back(std::move(e));
  }
  return out;
}

}  // namespace

double heldout_kl(Policy& policy, CausalLMImpl& model, const std::vector<PromptExample>& prompts, RewardSet& rewards,
                  const HeldoutKlOptions& options) {
  check(options.micro_batch_size > 0, "heldout_kl: micro_batch_size must be > 0");
  const std::vector<Episode> eps = sampled_episodes(policy, prompts, rewards, options);
  torch::NoGradGuard ng;
  CausalLMImpl& student = *policy.model();
  double sum = 0, n = 0;
  for (size_t i0 = 0; i0 < eps.size(); i0 += static_cast<size_t>(options.micro_batch_size)) {
    std::vector<const Episode*> part;
    for (size_t i = i0; i < std::min(eps.size(), i0 + static_cast<size_t>(options.micro_batch_size)); ++i)
      part.push_back(&eps[i]);
    const MicroBatch mb = make_micro_batch(part, student.device());
    const auto hs = forward_micro_batch(student, mb);
    const auto ht = forward_micro_batch(model, mb);
    const int64_t T = hs.size(1), chunk = std::max<int64_t>(1, 8192 / hs.size(0));
    for (int64_t t0 = first_weighted_column(mb[Stream::loss_weight]); t0 < T; t0 += chunk) {
      const int64_t len = std::min(chunk, T - t0);
      const auto ls = torch::log_softmax(student.logits(hs.narrow(1, t0, len)).to(torch::kFloat32), -1);
      const auto lt = torch::log_softmax(model.logits(ht.narrow(1, t0, len)).to(torch::kFloat32), -1).to(ls.device());
      const auto w = mb[Stream::loss_weight].narrow(1, t0, len);
      sum += (algo::bucket_divergence(ls, lt, algo::DistillDivergence::ReverseKl) * w).sum().item<double>();
      n += w.sum().item<double>();
    }
  }
  return n > 0 ? sum / n : -1.0;
}

}  // namespace rlf

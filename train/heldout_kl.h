// The held-out gap between a policy and another model of the same tokenizer
// (run.eval_kl_model; a distillation run's teacher): the mean per-token
//
//   KL(policy_t || model_t) = sum_v p(v) (log p(v) - log q(v))
//
// over the whole vocabulary (algorithms/distill_divergence.h, every token a
// bucket), at every position of the policy's own completions — one sample
// per held-out prompt at temperature 1 with a fixed seed, single-turn, the
// completion's text re-encoded after the prompt (the stop string and EOS
// not included). The reverse KL on the student's samples is the quantity
// on-policy distillation lowers (Agarwal et al. 2024). No gradient; logits
// one chunk of positions at a time.
#pragma once

#include <vector>

#include "data/examples.h"
#include "rewards/reward_set.h"
#include "rollout/policy.h"

namespace rlf {

struct HeldoutKlOptions {
  int64_t max_new_tokens = 64;   // per completion
  int64_t max_batch_rows = 64;   // rows per generation call
  int64_t micro_batch_size = 16; // sequences per forward
  bool add_special_tokens = true;
  uint64_t seed = 0;             // the samples' seed
  std::string accuracy_reward;   // evaluate()'s (the rewards score the samples too; unused here)
};

// The mean over the completions' tokens (-1 when no prompt gave a token).
double heldout_kl(Policy& policy, CausalLMImpl& model, const std::vector<PromptExample>& prompts, RewardSet& rewards,
                  const HeldoutKlOptions& options);

}  // namespace rlf

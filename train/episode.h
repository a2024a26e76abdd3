// Episode: the record everything trains on.
//
// A token sequence (prompt, then what the policy wrote, and — in multi-turn
// episodes — observations and feedback in between), with per-token loss
// weights (0 for every token the policy did not write) and the log-probs the
// rollout that produced it assigned (or that replay storage kept). The
// single-turn case is the special case of one prompt segment and one policy
// segment; critiques, retries, tool calls and replay are data, not new code.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace rlf {

struct Episode {
  int64_t group = 0;                 // samples of one prompt share a group id
  std::vector<int32_t> tokens;       // the whole sequence
  int64_t n_prompt = 0;              // tokens[0, n_prompt) are the prompt
  std::vector<float> loss_weight;    // [tokens.size()]: 0 = never trained on; 1 (or a shaped weight) = policy token
  std::vector<float> old_logprob;    // [tokens.size()]: log-prob when sampled (meaningful where loss_weight > 0)
  std::vector<float> ref_logprob;    // [tokens.size()] under the frozen reference, or empty
  double advantage = 0;              // per-sequence advantage (set by the trainer)
  std::optional<double> reward;      // aggregated reward (unset = missing)
  bool on_policy = true;             // false: replayed or refined (old_logprob from storage)
  std::string finish_reason;         // "stop" | "length"
  std::string completion_text;       // decoded completion (for logs and rewards)

  int64_t n_completion() const { return static_cast<int64_t>(tokens.size()) - n_prompt; }

  // A single-turn episode: loss weight 1 and the rollout's log-probs on the
  // completion tokens, 0 on the prompt.
  static Episode single_turn(int64_t group, const std::vector<int32_t>& prompt, const std::vector<int32_t>& completion,
                             const std::vector<float>& completion_logprobs);
};

inline Episode Episode::single_turn(int64_t group, const std::vector<int32_t>& prompt,
                                    const std::vector<int32_t>& completion, const std::vector<float>& logprobs) {
  Episode e;
  e.group = group;
  e.tokens = prompt;
  e.tokens.insert(e.tokens.end(), completion.begin(), completion.end());
  e.n_prompt = static_cast<int64_t>(prompt.size());
  e.loss_weight.assign(e.tokens.size(), 0.0f);
  e.old_logprob.assign(e.tokens.size(), 0.0f);
  for (size_t i = 0; i < completion.size(); ++i) {
    e.loss_weight[prompt.size() + i] = 1.0f;
    e.old_logprob[prompt.size() + i] = i < logprobs.size() ? logprobs[i] : 0.0f;
  }
  return e;
}

}  // namespace rlf

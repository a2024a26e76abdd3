// Feedback-conditional policy (FCP; Luo et al. 2025, "Language models can
// learn from verbal feedback without scalar rewards"), a stage of RL steps
// between scoring and credit, with the ce term instead of the policy
// gradient (docs/feedback.md).
//
// The policy learns p(response | prompt, feedback): every rollout prompt
// carries the feedback the run wants, `fcp.condition` (data.prompt_template
// = "Correct.\n{prompt}" with condition "Correct."); after scoring, the
// critic writes its feedback c on each rollout episode y, and the stage
// writes c in the condition's place — the prompt the episode would have
// needed for its own text to be on target — so the step maximises
//
//   log p(y | prompt with c in place of the condition)
//
// on every rollout episode, right or wrong (the ce term: no reward, no
// baseline, no advantage). Sampling under the condition then asks for
// what the feedback called right; the held-out evaluation renders the
// same template, so it measures p(y | x, condition), as FCP's inference
// does. An episode whose feedback is the condition itself keeps its tokens
// (nothing re-encoded); another's prompt is re-encoded with the feedback
// and its own sampled tokens follow unchanged (Episode::with_prompt).
//
// An episode whose critique fails, or whose relabelled prompt does not fit
// the context with its tokens, is not trained on (loss weight 0) and is
// counted. fcp.negative_weight scales the token weights of the episodes
// relabelled with other feedback (at 0 the stage trains only what the
// condition already describes, rejection sampling under the condition).
// Refinement and replay episodes keep their prompts. Metrics:
// fcp/episodes (rollout episodes given their feedback), fcp/positive_frac
// (of them, the share whose feedback is the condition), fcp/critic_failures,
// fcp/skipped_context, fcp/generated_tokens (a local critic's; they count
// against the run's budget), time/fcp_s.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "env/scored_group.h"
#include "feedback/critic.h"
#include "tokenizer/tokenizer.h"
#include "train/reducer.h"
#include "util/json_util.h"

namespace rlf {

struct FcpOptions {
  bool enabled = false;                // [fcp] enabled: relabel rollouts with their feedback, train the ce term
  std::string condition = "Correct.";  // the feedback rollouts are conditioned on; must appear in every rollout
                                       // prompt (data.prompt_template); the critic's words for a right answer
  double negative_weight = 1.0;        // the ce weight of an episode trained under other feedback than the
                                       // condition, in [0, 1] (1 = FCP as published; 0 = only the condition's)

  // Throws rlf::Error naming the fcp.* key.
  void validate() const;
};

struct FcpStats {
  int64_t n_episodes = 0;         // rollout episodes given their feedback
  int64_t n_positive = 0;         // ... whose feedback is the condition (prompt unchanged)
  int64_t n_critic_failures = 0;  // no feedback: not trained on
  int64_t n_skipped_context = 0;  // relabelled prompt + tokens over the context: not trained on
  int64_t n_generated_tokens = 0; // a local critic's generated tokens
  double fcp_s = 0;               // time in the stage
  // fcp/* and time/fcp_s, summed over the ranks (positive_frac of the summed counts).
  Json metrics(Reducer& reducer) const;
};

class FeedbackConditioning {
 public:
  // Borrows the tokenizer and the critic. `window`: the policy's context length.
  FeedbackConditioning(const Tokenizer& tokenizer, Critic& critic, FcpOptions options, bool add_special_tokens,
                       int64_t window);
  // Replaces each rollout episode by itself under its feedback (above). Throws rlf::Error naming fcp.condition
  // when a rollout prompt does not contain it.
  FcpStats relabel(std::vector<ScoredGroup>& groups, size_t accuracy_component);

 private:
  const Tokenizer& tokenizer_;
  Critic& critic_;
  FcpOptions options_;
  bool add_special_tokens_;
  int64_t window_;
};

}  // namespace rlf

// Episode: the record everything trains on.
//
// A token sequence made of segments with roles — the prompt, the policy's
// turns, and between turns the observations an environment appended (tool
// output, a game's reply) or feedback (a critique, "try again") — with, per
// token:
//   loss_weight     0 for every token the policy did not write; 1 (or a
//                   shaped weight) for policy tokens
//   old_logprob     log-prob under the behaviour policy that produced the
//                   token (the rollout's, or replay storage's); with
//                   algorithm.recompute_old_logprobs the trainer's own
//                   recomputation, the rollout's kept in behaviour_logprob
//   ref_logprob     log-prob under the frozen reference (empty when unused)
//   teacher_logprob log-prob under a distillation teacher (empty when unused)
//   teacher_topk_*  the teacher's top-k tokens and their log-probs (distill.top_k > 0)
//   advantage       set by credit assignment (algorithms/credit.h)
//   token_reward    per-token rewards (rewards that score tokens), 0 elsewhere
//   value           PPO: the critic's value of the state before the token (empty when unused)
//   value_target    PPO: the GAE return the critic learns there (empty when unused)
//   policy_version  the optimiser step whose weights sampled the token (-1: not sampled)
// and per episode: its group (same task), per-turn rewards, the aggregated
// reward, and whether it is on-policy.
//
// Token-exact: `tokens` are the prompt's ids, the ids the policy sampled and
// the ids appended between turns, exactly as the rollout engine saw them.
// Nothing is re-rendered or re-tokenized, so what the trainer scores is what
// the policy saw. The single-turn case is one prompt segment and one policy
// segment; critiques, retries, tool calls and replay are data, not new code.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace rlf {

enum class SegmentRole {
  Prompt,       // the task as the policy first sees it
  Policy,       // a turn the policy wrote (loss tokens)
  Observation,  // environment or tool output appended after a turn
  Feedback,     // natural-language feedback appended after a turn (a critique, "try again")
};
const char* segment_role_name(SegmentRole role);  // "prompt", "policy", "observation", "feedback"

// Where an episode's policy tokens come from.
enum class EpisodeSource {
  Rollout,     // sampled by the policy for this episode's own prompt
  Refinement,  // written by the policy with feedback (a critique) in its context, stored as a response to
               // the original prompt: off-policy, trained with policy shaping (algorithms/policy_shaping.h)
  Replay,      // a stored success of an earlier step (train/replay_buffer.h): off-policy, its stored
               // behaviour log-probs give the importance ratio (the off-policy safeguards apply)
};
const char* episode_source_name(EpisodeSource source);  // "rollout", "refinement", "replay"

struct Segment {
  SegmentRole role = SegmentRole::Prompt;
  int64_t begin = 0;           // [begin, end) into Episode::tokens
  int64_t end = 0;
  int64_t turn = 0;            // policy: its turn index; others: the turn they follow (prompt: 0)
  std::string text;            // decoded text (policy: stop string and EOS removed)
  std::string finish_reason;   // policy only: "stop" | "length"
  std::string stop;            // policy only: what ended the turn ("eos", the stop string, "")
  bool truncated = false;      // observation/feedback only: cut to fit (env/episode_producer.h)

  // The text as written: `text`, plus the stop string that ended a policy turn.
  std::string written() const;
};

struct Episode {
  int64_t group = 0;                      // episodes of one task share a group id
  std::vector<int32_t> tokens;            // the whole sequence
  int64_t n_prompt = 0;                   // tokens[0, n_prompt) are the prompt
  std::vector<Segment> segments;          // in order, covering tokens exactly
  std::vector<float> loss_weight;         // [tokens]
  std::vector<float> old_logprob;         // [tokens] (meaningful where loss_weight > 0)
  std::vector<float> behaviour_logprob;   // [tokens] or empty: the rollout's log-probs when old_logprob holds the
                                          // trainer's recomputation (rollout correction, algorithms/rollout_correction.h)
  std::vector<float> ref_logprob;         // [tokens] or empty
  std::vector<float> teacher_logprob;     // [tokens] or empty: the distillation teacher's (train/distillation.h)
  std::vector<int32_t> teacher_topk_id;   // [tokens * k] or empty: distill.top_k > 0, the teacher's k most likely
                                          // tokens at each token's position (row t: the distribution of tokens[t])
  std::vector<float> teacher_topk_logprob;  // [tokens * (k + 1)] or empty: their log-probs, then the tail bucket's
  std::vector<float> advantage;           // [tokens] (0 where loss_weight == 0), or empty before credit
  std::vector<float> token_reward;        // [tokens] or empty (no per-token rewards)
  std::vector<float> value;               // [tokens] or empty: the critic's values when scored (train/value_model.h)
  std::vector<float> value_target;        // [tokens] or empty: GAE returns (0 off policy tokens; NaN = no target)
  std::vector<int32_t> policy_version;    // [tokens]: optimiser step that sampled the token, -1 elsewhere
  std::vector<float> ratings;             // [K] or empty: a multi-objective reward model's targets for its K
                                          // heads at the sequence's last token (NaN = not rated)
  int64_t n_turns = 0;                    // policy turns
  std::vector<std::optional<double>> turn_rewards;  // [n_turns] environment reward after each turn (unset = none)
  std::vector<std::string> turn_feedback; // [n_turns] the environment's feedback text on each turn ("" = none)
  std::optional<double> reward;           // aggregated episode reward (unset = missing: no gradient)
  std::optional<bool> correct;            // the accuracy reward's verdict (score > 0.5); unset = unknown
  double group_accuracy = -1;             // share of correct episodes in its group (NFT's r_q); < 0 = unknown
  bool on_policy = true;                  // false: replayed or produced under another context
  EpisodeSource source = EpisodeSource::Rollout;
  std::string finish_reason;              // the last policy turn's: "stop" | "length"
  std::string end_reason;                 // why the episode ended: "env" | "max_turns" | "length" | "context" | "env_error"
  std::string env_error;                  // why the environment failed ("" when it did not)
  std::string completion_text;            // the last policy turn's text (what single-turn rewards score)

  int64_t n_completion() const { return static_cast<int64_t>(tokens.size()) - n_prompt; }
  // Tokens with loss weight > 0.
  int64_t n_policy_tokens() const;
  // The text after the prompt, segment by segment, as the policy saw it
  // (stop strings included).
  std::string transcript() const;

  // A single-turn episode: loss weight 1, the rollout's log-probs and
  // `version` on the completion tokens; 0 / -1 on the prompt.
  static Episode single_turn(int64_t group, const std::vector<int32_t>& prompt, const std::vector<int32_t>& completion,
                             const std::vector<float>& completion_logprobs, int32_t version = 0);

  // Checks the invariants (sizes, segments covering tokens in order, weight 0
  // outside policy segments); throws rlf::Error saying which one fails.
  void validate() const;
};

}  // namespace rlf

// Episode: the record everything trains on.
//
// A token sequence made of segments with roles — the prompt, the policy's
// turns, and between turns the observations an environment appended (tool
// output, a game's reply) or feedback (a critique, "try again") — with, per
// token, the streams of env/token_streams.h (loss weight, behaviour,
// reference and teacher log-probs, advantage, critic values and targets,
// process step labels, the policy version that sampled the token, ...), each
// declared once there and carried to the micro-batch from that declaration;
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

#include "env/token_streams.h"

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
  // The per-token streams: `std::vector<type> name` for every row of RLF_TOKEN_STREAMS
  // (env/token_streams.h: what each holds, its size, how the micro-batch carries it).
#define RLF_EPISODE_STREAM_MEMBER(type, name, ...) std::vector<type> name;
  RLF_TOKEN_STREAMS(RLF_EPISODE_STREAM_MEMBER)
#undef RLF_EPISODE_STREAM_MEMBER
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

  // The same episode after another prompt: `prompt` replaces tokens[0, n_prompt) (the first segment, which must
  // be the prompt, of n_prompt tokens, gets `prompt_text`), every later token keeps its values, and the new
  // prompt positions hold what the old prompt's first position held in every per-token stream (k values per
  // token where a stream has k). Throws rlf::Error when the episode has no prompt segment or `prompt` is empty.
  Episode with_prompt(const std::vector<int32_t>& prompt, const std::string& prompt_text) const;

  // Checks the invariants (sizes, segments covering tokens in order, weight 0
  // outside policy segments); throws rlf::Error saying which one fails.
  void validate() const;
};

}  // namespace rlf

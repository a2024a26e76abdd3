// EpisodeProducer: tasks -> episodes, through an environment and the rollout
// engine. The one producer of episodes for training (train/) and evaluation
// (eval/): prompt -> generate -> (environment turns) -> Episode.
//
// Per task it starts `n` environment sessions (reset -> the first
// observation, encoded as the prompt). A group whose sessions all return the
// same prompt is one engine request of n samples (its prompt prefilled once);
// otherwise each episode is its own request. While the engine decodes, the
// producer is its TurnHandler: at the end of each policy turn the session's
// step() gives an observation (encoded and appended, the row continues from
// its cached state), a reward, or the end of the episode.
//
// Episode limits and the overflow rule (documented in docs/environments.md):
//   - at most max_turns policy turns (end_reason "max_turns");
//   - each turn at most SamplingParams::max_new_tokens tokens;
//   - all tokens after the prompt at most max_episode_tokens (end_reason "length");
//   - an observation is cut to its first max_observation_tokens tokens, and
//     further to (room left - 1) so the policy keeps at least one token; when
//     not even that fits, the episode ends (end_reason "context"). Every cut
//     and every such end is counted (EpisodeStats) and the first few are
//     described in EpisodeStats::notes; nothing is dropped silently.
// A session that throws rlf::Error ends only its episode (end_reason
// "env_error", Episode::env_error holds the reason).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "env/environment.h"
#include "env/episode.h"
#include "rollout/engine.h"
#include "rollout/policy.h"
#include "util/json_util.h"

namespace rlf {

struct EpisodeOptions {
  int64_t max_turns = 4;                // policy turns per episode at most (single-turn environments: 1)
  int64_t max_observation_tokens = 64;  // an observation is cut to its first N tokens
  int64_t max_episode_tokens = 0;       // tokens after the prompt; 0 = max_turns * max_new_tokens
                                        //   + (max_turns - 1) * max_observation_tokens
  int64_t max_batch_rows = 64;          // sequences the engine decodes together
  bool add_special_tokens = true;       // add BOS when encoding prompts (false when a chat template wrote it)
  bool record_sampler_kl = false;       // Episode::sampler_kl at each sampled token (RL rollouts)
  // Sampling-mask replay: each filtered draw's kept set in Episode::sampling_mask_id, and
  // old_logprob renormalised over it (the trainer's log-probs then are too).
  bool sampling_replay = false;

  // Throws rlf::Error naming the env.* key.
  void validate() const;
  // The token budget after the prompt for turns of `max_new_tokens`.
  int64_t episode_budget(int64_t max_new_tokens, bool single_turn) const;
};

// What happened while producing, for metrics (summed over calls).
struct EpisodeStats {
  int64_t n_episodes = 0;
  int64_t n_turns = 0;                 // policy turns
  int64_t n_policy_tokens = 0;         // sampled tokens
  int64_t n_observation_tokens = 0;    // appended tokens
  int64_t n_ended_by_env = 0;          // the environment said done
  int64_t n_ended_by_length = 0;       // token budget used up
  int64_t n_ended_by_max_turns = 0;
  int64_t n_ended_by_context = 0;      // an observation did not fit
  int64_t n_env_errors = 0;            // a session failed (episode ended)
  int64_t n_tool_calls = 0;
  int64_t n_tool_errors = 0;
  int64_t n_observations_truncated = 0;
  // Answers the environment judged (EnvStep::correct), by attempt: the k-th
  // judged answer of an episode is attempt k (0-based).
  std::vector<int64_t> attempts_judged;  // [attempt] answers judged
  std::vector<int64_t> attempts_right;   // [attempt] ... and right
  int64_t n_judged_episodes = 0;       // episodes with at least one judged answer
  int64_t n_solved = 0;                // ... of which one answer was right
  int64_t solve_turns = 0;             // sum over solved episodes of the policy turns up to the right answer
  double rollout_s = 0;                // in the engine (environment steps included)
  double env_s = 0;                    // in environment reset/step calls
  std::vector<std::string> notes;      // the first few errors and cuts, for logs

  EpisodeStats& operator+=(const EpisodeStats& o);
  // "episode/turns_mean", "episode/ended_by_env", ..., "env/tool_calls", ...;
  // with judged answers also "episode/accuracy_attempt{k}" (k = 1, 2, ...:
  // right / judged among k-th answers), "episode/accuracy_first" (= attempt
  // 1), "episode/accuracy_final" (episodes solved at any attempt / episodes
  // judged) and "episode/turns_to_solve" (mean policy turns of solved
  // episodes, the solving turn included).
  Json to_metrics() const;
};

// The episodes of one task (a group).
struct EpisodeGroup {
  const PromptExample* task = nullptr;
  std::string prompt;               // the first observation, as the policy saw it
  std::vector<Episode> episodes;
};

// A prompt already tokenized, for EpisodeProducer::produce_from_ids.
struct TokenPrompt {
  std::vector<int32_t> ids;             // what the policy reads (non-empty)
  std::vector<int32_t> episode_prompt;  // the episode's prompt tokens before the sampled ones; empty = ids
  SamplingParams params;                // its seed set by the caller (params.seed)
};

class EpisodeProducer {
 public:
  // Borrows the policy (sampled from as it is now) and the environment.
  EpisodeProducer(Policy& policy, Environment& env, EpisodeOptions options);

  // `n` episodes for each task; group i's sampling is seeded with seeds[i].
  // params.max_new_tokens limits each turn; the environment's turn stops are
  // added to params.stop_strings. Tokens record `policy_version`.
  std::vector<EpisodeGroup> produce(const std::vector<const PromptExample*>& tasks, int64_t n,
                                    const SamplingParams& params, const std::vector<uint64_t>& seeds,
                                    int32_t policy_version, EpisodeStats* stats);

  // One single-turn episode per prompt, in order, through this producer's
  // engine and no environment session: prompts fitted to the context by the
  // caller (a critique or a refinement prompt, feedback/feedback_prompt.h) are
  // fed as given, never re-encoded. Episode k is prompts[k].episode_prompt
  // (or its ids) followed by the sampled tokens (group 0, end_reason "env":
  // the one turn ended it), its policy segment carrying the text, finish
  // reason and stop. The engine's cache is released afterwards.
  std::vector<Episode> produce_from_ids(const std::vector<TokenPrompt>& prompts, int32_t policy_version);

  RolloutEngine& engine() { return engine_; }
  Policy& policy() { return policy_; }
  Environment& environment() { return env_; }
  const EpisodeOptions& options() const { return options_; }

 private:
  Policy& policy_;
  Environment& env_;
  EpisodeOptions options_;
  RolloutEngine engine_;
};

}  // namespace rlf

// Evaluation of a policy on prompts with a reward set:
//
//   1. generate — n_samples episodes per prompt through the environment
//                 (single-turn unless one is given) with the episode
//                 producer (env/episode_producer.h) — the same code training
//                 samples with — all prompts in one batched call, or in
//                 chunks of prompts_per_call; prompt i is seeded from
//                 (options.seed, i), so results depend on the seed only
//   2. score    — every reward component scores each prompt's group; a
//                 sample is correct when the accuracy component scores above
//                 correct_threshold (a missing score is not correct)
//   3. metrics  — per prompt c correct of n, then over prompts:
//                 pass@k (unbiased, eval/pass_at_k.h) and maj@k (majority
//                 vote, eval/majority_vote.h) for k in reported_k_values(n)
//                 (maj@k from k = 2), mean reward (total and per component),
//                 completion length, truncated share, throughput, times.
//
// evaluate_completions() is steps 2–3 on completions made elsewhere (no
// model), so metrics are testable with hand-made groups.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "data/examples.h"
#include "env/environment.h"
#include "env/episode_producer.h"
#include "eval/eval_options.h"
#include "rewards/reward_set.h"
#include "rollout/policy.h"
#include "util/json_util.h"

namespace rlf {

// One scored completion.
struct EvalSample {
  std::string text;                           // completion text (stop string and EOS removed)
  int64_t n_tokens = 0;                       // completion tokens (the EOS/stop token included)
  std::string finish_reason;                  // "stop" | "length"
  std::optional<double> reward;               // weighted sum of the components that scored it; unset = none did
  std::vector<std::optional<double>> scores;  // [C] per component (unset = missing)
  bool correct = false;                       // accuracy component > correct_threshold
  std::optional<std::string> answer;          // extracted final answer (maj@k); unset = none found
  std::string explanation;                    // every component's score and reason, one line
};

// One prompt's completions and verdicts (a line of the details JSONL).
struct PromptResult {
  std::string id;
  std::string prompt;     // the text the model saw
  std::string reference;  // "" when the dataset has none
  int64_t n_correct = 0;  // c of pass@k
  std::vector<EvalSample> samples;
};

struct EvalResult {
  int64_t n_prompts = 0;
  int64_t n_samples = 0;                   // per prompt (n)
  double temperature = 0;                  // in effect
  uint64_t seed = 0;
  std::vector<std::string> component_names;  // reward components, in order
  std::string accuracy_reward;               // the component deciding correctness
  std::map<int64_t, double> pass_at_k;       // k -> mean over prompts
  std::map<int64_t, double> maj_at_k;        // k -> mean over prompts (k >= 2 only)
  std::string best_of;                       // the component picking each prompt's sample ("" = none)
  double best_of_n = -1;                     // share of prompts whose pick is correct (-1 without best_of)
  double mean_reward = 0;                    // over samples with a total
  int64_t n_reward_missing = 0;              // samples no component scored
  std::vector<ComponentStats> components;    // per component: mean, std, scored, missing
  int64_t n_completion_tokens = 0;           // all completions
  double mean_completion_tokens = 0;
  double truncated_fraction = 0;             // share of completions cut at max_new_tokens (finish "length")
  double generate_s = 0;                     // time in generate() (0 for evaluate_completions)
  double score_s = 0;                        // time scoring
  double wall_s = 0;                         // the whole evaluation
  double tokens_per_s = 0;                   // completion tokens / generate_s (0 when not generated)
  std::vector<PromptResult> prompts;
};

// Called after each generation chunk with (prompts done, prompts in all).
using EvalProgress = std::function<void(int64_t done, int64_t total)>;

// The environment episodes run in: `env` (null = single-turn) and its
// limits (max_turns, ...; max_batch_rows and add_special_tokens come from EvalOptions).
struct EvalEnvironment {
  Environment* env = nullptr;
  EpisodeOptions episode;
};

// Steps 1–3 on the first max_prompts (0 = all) of `examples`. Checks every
// record against the rewards (and the environment) first. Throws rlf::Error
// for bad options, an unknown accuracy_reward, a prompt that encodes to
// nothing, or a reward misuse.
EvalResult evaluate(Policy& policy, const std::vector<PromptExample>& examples, RewardSet& rewards,
                    const EvalOptions& options, const EvalProgress& progress = nullptr,
                    const EvalEnvironment& environment = {});

// Steps 2–3: completions[i] are the n_samples completions of examples[i]
// (every group must have options.n_samples; max_prompts is ignored).
EvalResult evaluate_completions(const std::vector<PromptExample>& examples,
                                const std::vector<std::vector<RewardSample>>& completions, RewardSet& rewards,
                                const EvalOptions& options);

// The summary object `rlf eval --json` prints: "pass@1", "pass@<k>",
// "maj@<k>", "mean_reward", "reward/<component>", "n_prompts", "n_samples",
// "wall_s", lengths, truncation, throughput...
Json eval_summary_json(const EvalResult& result);

// One JSONL line per prompt: id, prompt, reference, n_correct, n_samples and
// the samples (text, tokens, finish_reason, reward, scores, correct, answer, explanation).
Json prompt_result_json(const PromptResult& prompt, const std::vector<std::string>& component_names);

// Writes one prompt_result_json line per prompt to `path` (atomically).
void write_eval_details(const std::filesystem::path& path, const EvalResult& result);

// A short human-readable report (metrics table).
std::string format_eval_report(const EvalResult& result);

}  // namespace rlf

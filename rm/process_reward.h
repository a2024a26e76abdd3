// Process reward models (PRMs): a one-output classifier (rm/reward_model.h)
// read at the last token of every step of a solution, sigma(score) = the
// probability that the step is right (Lightman et al. 2023; Math-Shepherd,
// Wang et al. 2024). Trained by trainer.kind = "rm" with [process.data]
// (data/step_dataset.h; the prm loss term, train/loss_terms.h); a saved PRM
// is a LlamaForSequenceClassification whose transformers score of the
// solution cut after step k is the step's score (oracle-tested).
//
// Steps are found on token ids, not re-tokenized text: a step ends at the
// token that completes an occurrence of the delimiter, and the last token
// ends the last step (step_end_positions). Training and the reward use the
// same rule, so the policy's own tokens are scored exactly as sampled.
//
// The reward "process_reward" turns a PRM into per-step rewards:
//
//   [[reward]]
//   type = "process_reward"
//   model = "runs/prm/final"          # the PRM directory (required); it must share the policy's tokenizer
//   delimiter = "\n"                  # between steps, as the PRM was trained
//   bounding = "clip"                 # "none" | "clip" | "delta" (algorithms/reward_model_loss.h)
//   clip_threshold = 0.5              # eta of clip: r_k = min(p_k - eta, 0)
//   placement = "steps"               # "steps": per-token rewards at the steps' ends, score 0;
//                                     # "outcome": score = sum_k r_k, no per-token rewards (best-of-n)
//   micro_batch_size = 32
//   add_special_tokens = true         # without prompt ids (e.g. rlf generate): tokenize the prompt with BOS
//   dtype = "fp32"
//   device = "cpu"
//
// With placement "steps" each completion's bounded step rewards r_k become
// per-token rewards on the steps' last tokens (RewardResult::token_rewards)
// and its score is 0, so the rewards count once, where the steps end
// (`token`/`gae` credit place them there; `episode` credit sums them). The
// policy's own token ids are scored when the sample carries them (training);
// otherwise the prompt and completion text are tokenized by the PRM's
// tokenizer. The explanation lists the p_k.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "algorithms/reward_model_loss.h"
#include "data/step_dataset.h"
#include "rewards/registry.h"
#include "rollout/policy.h"
#include "util/json_util.h"

namespace rlf {

// Positions (indices into `ids`) of each step's last token: every token that
// completes an occurrence of `delimiter` in the decoded bytes, then the last
// token with text when text follows the last delimiter. Special tokens (EOS,
// BOS) have no text and end no step, so a sampled completion ending in EOS
// gives the ends its text gives. Empty for empty `ids`.
std::vector<int64_t> step_end_positions(const Tokenizer& tokenizer, std::span<const int32_t> ids,
                                        const std::string& delimiter);

// Step probabilities sigma(score) of `model` (output 0) at `ends` of each sequence.
std::vector<std::vector<double>> step_probabilities(CausalLMImpl& model, const std::vector<std::vector<int32_t>>& seqs,
                                                    const std::vector<std::vector<int64_t>>& ends,
                                                    int64_t micro_batch_size);

// Tokens of (prompt, steps joined by delimiter) and the absolute positions of
// the steps' last tokens; throws rlf::Error naming example.where when the
// tokens do not give one end per step.
struct ProcessInput {
  std::vector<int32_t> tokens;
  int64_t prompt_tokens = 0;
  std::vector<int64_t> ends;
};
ProcessInput process_input(const Tokenizer& tokenizer, const StepExample& example, const std::string& delimiter,
                           bool add_special);

// A PRM on held-out step-labelled solutions.
struct ProcessRewardMetrics {
  int64_t n_solutions = 0, n_steps = 0;
  double step_accuracy = 0;      // share of steps with (p > 0.5) == (label > 0.5)
  double bce = 0;                // mean binary cross-entropy per step
  double solution_accuracy = 0;  // share of solutions with (min_k p_k > 0.5) == (every label > 0.5)
  double first_error = 0;        // among solutions with a wrong step: share whose first p_k <= 0.5 is at the first wrong step
  double label_mean = 0;         // share of steps labelled right (> 0.5): max(it, 1 - it) is a constant guess's accuracy
  Json to_json() const;
};
ProcessRewardMetrics measure_process_reward(CausalLMImpl& model, const Tokenizer& tokenizer,
                                            const std::vector<StepExample>& examples, const std::string& delimiter,
                                            bool add_special, int64_t micro_batch_size);

struct ProcessRewardOptions {
  std::string model;
  std::string tokenizer;
  std::string delimiter = "\n";
  std::string bounding = "clip";
  double clip_threshold = 0.5;
  std::string placement = "steps";
  int64_t micro_batch_size = 32;
  bool add_special_tokens = true;
  std::string dtype = "fp32";
  std::string device = "cpu";
};

class ProcessReward final : public Reward {
 public:
  // Loads the PRM; errors name the option.
  explicit ProcessReward(ProcessRewardOptions options);
  std::string name() const override { return "process_reward"; }
  std::vector<RewardResult> score(const RewardGroup& group) override;

 private:
  ProcessRewardOptions options_;
  algo::StepBounding bounding_;
  Policy prm_;
};

// The reward type "process_reward", for make_reward_set's `extra`.
RewardFactories process_reward_factories();

}  // namespace rlf

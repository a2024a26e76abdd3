// Reward models: a Llama-family backbone with a score head, Hugging Face's
// *ForSequenceClassification (ModelConfig::num_labels > 0). A reward model
// scores a token sequence at its last token: the prompt's ids (with the
// tokenizer's special tokens when add_special) followed by the response's
// ids, no EOS — as transformers' LlamaForSequenceClassification does for an
// unpadded sequence (tested against it). Training (trainer.kind = "rm", the
// rm loss term in train/loss_terms.h) sees the same positions: its episodes
// are prompt + response + EOS, and position t of a micro-batch reads token t,
// so the last input position is the response's last token.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "data/preference_dataset.h"
#include "model/loader.h"
#include "rm/gating.h"
#include "tokenizer/tokenizer.h"
#include "util/json_util.h"

namespace rlf {

// A classifier with `num_labels` outputs on `base`'s backbone (weights copied;
// a causal LM's head is dropped): the score head starts at normal(0,
// 1/sqrt(hidden + 1)) from `seed`. Same dtype and device as `base`.
// `names`: the outputs' names (config.json's id2label; [] = LABEL_<i>).
CausalLM make_reward_model(CausalLMImpl& base, int64_t num_labels, uint64_t seed,
                           const std::vector<std::string>& names = {});

// What a reward model reads for (prompt, response).
std::vector<int32_t> reward_model_tokens(const Tokenizer& tokenizer, const std::string& prompt,
                                         const std::string& response, bool add_special);

// Scores of token sequences (not empty), [N][num_labels], without gradient,
// `micro_batch_size` sequences per forward (right-padded, sorted by length).
// With `context_lengths` (one per sequence, in [1, its length]) also the
// hidden states [N, D] fp32 on the CPU at positions context_lengths[i] - 1
// (the prompt's last token: a gating layer's features) in *context.
std::vector<std::vector<float>> score_sequences(CausalLMImpl& model, const std::vector<std::vector<int32_t>>& seqs,
                                                int64_t micro_batch_size,
                                                const std::vector<int64_t>* context_lengths = nullptr,
                                                torch::Tensor* context = nullptr);

// Output `label` of a classifier at given positions of each sequence (no
// gradient): out[i][j] = score at positions[i][j] (the state after token
// positions[i][j]), for process reward models' step scores.
std::vector<std::vector<float>> score_positions(CausalLMImpl& model, const std::vector<std::vector<int32_t>>& seqs,
                                                const std::vector<std::vector<int64_t>>& positions, int64_t label,
                                                int64_t micro_batch_size);

// How a reward model's outputs become one reward: one output (`label`), a
// direction over all of them (Directional Preference Alignment: d . r), or
// the model's gating layer (ArmoRM, rm/gating.h).
struct RewardReadout {
  int64_t label = 0;
  std::vector<double> direction;                // [] = not a direction
  std::shared_ptr<const RewardGating> gating;   // null = not gated
  bool needs_context() const { return gating != nullptr; }
  std::string describe() const;                 // "label 0", "direction [..]", "gating over [..]"
  // One reward per row of scores [N][K]; `context` [N, D] (gating only).
  std::vector<double> apply(const std::vector<std::vector<float>>& scores, const torch::Tensor& context) const;
  // Errors when it does not fit a model with `num_labels` outputs (`what` names the option).
  void check_fits(int64_t num_labels, const std::string& what) const;
};

// Tokens of (prompt, response) and where the prompt ends in them.
struct RewardModelInput {
  std::vector<int32_t> tokens;
  int64_t prompt_tokens = 0;
};
RewardModelInput reward_model_input(const Tokenizer& tokenizer, const std::string& prompt, const std::string& response,
                                    bool add_special);

// Rewards of (prompt, response) inputs under `readout` ([N], no gradient);
// the raw scores [N][K] in *scores when given.
std::vector<double> reward_model_rewards(CausalLMImpl& model, const std::vector<RewardModelInput>& inputs,
                                         const RewardReadout& readout, int64_t micro_batch_size,
                                         std::vector<std::vector<float>>* scores = nullptr);

// Loads a reward model directory; an error naming it when it is not a classifier.
LoadedModel load_reward_model(const std::filesystem::path& dir, const LoadOptions& options);

// A reward model on held-out preference pairs (RewardBench-style).
struct RewardModelPairMetrics {
  int64_t n_pairs = 0;
  double accuracy = 0;        // share of pairs with score(chosen) > score(rejected) (ties count 0)
  double margin = 0;          // mean score(chosen) - score(rejected)
  double loss = 0;            // mean Bradley-Terry loss -log sigmoid(margin)
  double ece = 0;             // expected calibration error of P(chosen wins) = sigmoid(margin), 10 bins
  double score_mean = 0;      // mean score over both responses
  double score_std = 0;       // their standard deviation
  std::string readout;        // RewardReadout::describe()
  // Per output (by the model's label names), when the pairs carry ratings of
  // it: Pearson's r and Spearman's rho of the output against the ratings
  // over every rated response, and the pairwise accuracy of the output alone.
  struct Attribute {
    int64_t rated = 0;
    double pearson = 0, spearman = 0, pair_accuracy = 0;
  };
  std::map<std::string, Attribute> attributes;
  Json to_json() const;
};

// Scores every pair (the reward `readout` gives) and summarises.
RewardModelPairMetrics measure_reward_model(CausalLMImpl& model, const Tokenizer& tokenizer,
                                            const std::vector<PreferenceExample>& pairs, bool add_special,
                                            int64_t micro_batch_size, const RewardReadout& readout = {});

}  // namespace rlf

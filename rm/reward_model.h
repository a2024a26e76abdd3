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
#include <string>
#include <vector>

#include "data/preference_dataset.h"
#include "model/loader.h"
#include "tokenizer/tokenizer.h"
#include "util/json_util.h"

namespace rlf {

// A classifier with `num_labels` outputs on `base`'s backbone (weights copied;
// a causal LM's head is dropped): the score head starts at normal(0,
// 1/sqrt(hidden + 1)) from `seed`. Same dtype and device as `base`.
CausalLM make_reward_model(CausalLMImpl& base, int64_t num_labels, uint64_t seed);

// Each row's last real position: key_mask [B, T] bool -> [B] int64 (the
// number of true entries - 1; rows must not be empty).
torch::Tensor last_token_index(const torch::Tensor& key_mask);

// The scores [B, num_labels] fp32 of the rows' last positions, from a
// classifier's hidden states [B, T, D].
torch::Tensor last_token_scores(CausalLMImpl& model, const torch::Tensor& hidden, const torch::Tensor& key_mask);

// What a reward model reads for (prompt, response).
std::vector<int32_t> reward_model_tokens(const Tokenizer& tokenizer, const std::string& prompt,
                                         const std::string& response, bool add_special);

// Scores of token sequences (not empty), [N][num_labels], without gradient,
// `micro_batch_size` sequences per forward (right-padded, sorted by length).
std::vector<std::vector<float>> score_sequences(CausalLMImpl& model, const std::vector<std::vector<int32_t>>& seqs,
                                                int64_t micro_batch_size);

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
  Json to_json() const;
};

// Scores every pair (label `label` of the head) and summarises.
RewardModelPairMetrics measure_reward_model(CausalLMImpl& model, const Tokenizer& tokenizer,
                                            const std::vector<PreferenceExample>& pairs, bool add_special,
                                            int64_t micro_batch_size, int64_t label = 0);

}  // namespace rlf

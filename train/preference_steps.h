// A DPO run's (and a reward model's) episodes (train/run_kind_preference.h):
// each (prompt, chosen, rejected) pair as two episodes in a group of their own: the chosen response with reward
// 1 and the rejected one with reward 0, each tokenized like an SFT target
// (prompt weight 0, response + EOS weight 1; train/sft_steps.h), with the
// reference model's log-probs, computed for every training pair once, when
// the run starts, and kept for every epoch. The trainer's pref term
// (train/loss_terms.h) turns each group into one pair.
//
// measure_preferences() scores held-out pairs: the implicit-reward accuracy
// and margin the loss optimises, and the policy's own preference (mean
// log-prob per token of chosen > rejected), which is meaningful before any
// training too.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "algorithms/preference_loss.h"
#include "data/preference_dataset.h"
#include "env/episode.h"
#include "model/transformer.h"
#include "rollout/policy.h"
#include "util/json_util.h"

namespace rlf {

// The two episodes of one pair (chosen first), in `group`; with `attributes`,
// each carries its response's ratings of them (Episode::ratings, NaN where
// the pair does not rate one).
std::vector<Episode> preference_episodes(const Policy& policy, const PreferenceExample& pair, bool add_special_tokens,
                                         int64_t group, const std::vector<std::string>& attributes = {});

// The reference model's log-probs of both responses of every pair,
// [2 * pair + (0 chosen, 1 rejected)], computed in the pairs' order in chunks
// (so a resumed run computes exactly the same values). Throws rlf::Error when
// `pairs` is empty.
std::vector<std::vector<float>> preference_reference_logprobs(const Policy& policy,
                                                              const std::vector<PreferenceExample>& pairs,
                                                              bool add_special_tokens, CausalLMImpl& reference,
                                                              int64_t micro_batch_size);


struct PreferenceMetrics {
  int64_t n_pairs = 0;
  double accuracy = 0;       // share of pairs whose implicit reward of chosen > rejected (ties count 0, as TRL)
  double margin = 0;         // mean implicit reward margin
  double logp_accuracy = 0;  // share of pairs with mean log-prob per token of chosen > rejected
  double loss = 0;           // mean preference loss (sppo: of the pairs as groups of two)
  Json to_json() const;
};

// Held-out pairs under `model` (the policy) and `reference` (null when the
// loss is reference-free).
PreferenceMetrics measure_preferences(const Policy& policy, CausalLMImpl& model, CausalLMImpl* reference,
                                      const std::vector<PreferenceExample>& pairs,
                                      const algo::PreferenceLossOptions& options, bool add_special_tokens,
                                      int64_t micro_batch_size);

}  // namespace rlf

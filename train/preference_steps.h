// PreferenceSteps: where a DPO run's episodes come from. Each step is the
// next batch of (prompt, chosen, rejected) pairs from a seeded cursor, as two
// episodes per pair in a group of their own: the chosen response with reward
// 1 and the rejected one with reward 0, each tokenized like an SFT target
// (prompt weight 0, response + EOS weight 1; train/sft_steps.h), with the
// reference model's log-probs, computed for every training pair once, when
// the steps are built, in the pairs' order (so a resumed run computes exactly
// the same values), and kept for every epoch. The trainer's pref term
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
#include "data/data_cursor.h"
#include "data/preference_dataset.h"
#include "env/episode.h"
#include "model/transformer.h"
#include "rollout/policy.h"
#include "train/reducer.h"
#include "util/json_util.h"

namespace rlf {

// The two episodes of one pair (chosen first), in `group`; with `attributes`,
// each carries its response's ratings of them (Episode::ratings, NaN where
// the pair does not rate one).
std::vector<Episode> preference_episodes(const Policy& policy, const PreferenceExample& pair, bool add_special_tokens,
                                         int64_t group, const std::vector<std::string>& attributes = {});

class PreferenceSteps {
 public:
  // Borrows the policy, the pairs (not empty) and the reference (null for a
  // reference-free loss), whose log-probs of every pair it computes here.
  // `attributes`: the ratings the episodes carry (multi-objective reward models).
  PreferenceSteps(const Policy& policy, const std::vector<PreferenceExample>& pairs, int64_t batch_size, uint64_t seed,
                  bool add_special_tokens, CausalLM reference, int64_t micro_batch_size,
                  std::vector<std::string> attributes = {});

  std::vector<Episode> next();
  // Data-parallel: keep this rank's positions of each batch (group id = position).
  void set_shard(Shard shard) { shard_ = shard; }
  DataCursor& cursor() { return cursor_; }
  // Seconds spent computing the reference log-probs (0 without a reference).
  double reference_s() const { return reference_s_; }

 private:
  const Policy& policy_;
  const std::vector<PreferenceExample>& pairs_;
  bool add_special_;
  std::vector<std::string> attributes_;
  Shard shard_;
  DataCursor cursor_;
  std::vector<std::vector<float>> ref_logprobs_;  // [2 * pair + (0 chosen, 1 rejected)], empty without a reference
  double reference_s_ = 0;
};

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

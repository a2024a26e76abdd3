// Preference pairs as a kind of run's data: the DPO kind (trainer.kind =
// "dpo", make_preference_kind in train/run_kind.h) and the pairs a reward
// model trains on (train/run_kind_reward_model.cpp) share their loading and
// their step source.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "data/preference_dataset.h"
#include "train/run_context.h"
#include "train/run_kind_dataset.h"

namespace rlf {

// [preference.data]: the training pairs outside the held-out eval prompts and
// the held-out pairs, both only those that fit the context (bad records: an
// error naming them, or with preference.data.on_bad_record = "skip" dropped
// and counted). Throws rlf::Error when no training pair is left.
struct PreferencePairs {
  std::unique_ptr<PreferenceDataset> data;
  std::vector<PreferenceExample> train, eval;
};
PreferencePairs load_preference_pairs(RunContext& r);

// Each step the next batch of training pairs, two episodes each
// (train/preference_steps.h preference_episodes; group = position in the
// batch); metrics: "pref/pairs" (over the ranks).
class PreferenceSource {
 public:
  // Borrows r and `pairs` (not empty). `reference` (may be null): the
  // reference log-probs of every pair are computed here, once, and logged;
  // `attributes`: the ratings the episodes carry (multi-objective reward models).
  PreferenceSource(RunContext& r, const std::vector<PreferenceExample>& pairs, CausalLM reference,
                   std::vector<std::string> attributes = {});
  std::vector<Episode> next(Json& metrics);
  DataCursor& cursor() { return source_->cursor(); }

 private:
  Reducer& reducer_;
  std::vector<std::vector<float>> ref_logprobs_;  // [2 * pair + (0 chosen, 1 rejected)], empty without a reference
  std::unique_ptr<DatasetSource> source_;
};

}  // namespace rlf

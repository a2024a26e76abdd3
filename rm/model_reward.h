// The reward "reward_model": a trained reward model (rm/reward_model.h) as a
// reward any config can name:
//
//   [[reward]]
//   type = "reward_model"
//   model = "runs/reward_model/final"   # a *ForSequenceClassification directory (required)
//   tokenizer = ""                      # "" = the one stored with the model
//   label = 0                           # which output of the head is the reward
//   direction = []                      # or a weight per output: reward = direction . scores
//                                       #   (Directional Preference Alignment); [] = use `label`
//                                       # A model with a gating layer (ArmoRM, rm/gating.h) is read
//                                       # through it unless `label` or `direction` is given.
//   normalize = "none"                  # "none" | "group": (s - group mean) / (group std + 1e-6)
//   micro_batch_size = 32               # sequences per forward
//   add_special_tokens = true           # as the prompt was tokenized when the model was trained
//   dtype = "fp32"                      # the model's dtype on the device
//   device = "cpu"
//
// It reads the group's prompt and each completion (multi-turn: every turn and
// observation joined in order), scored in batches at the last token. The
// model is loaded once, when the reward is built, and never trained.
#pragma once

#include <string>
#include <vector>

#include "rewards/registry.h"
#include "rm/reward_model.h"
#include "rollout/policy.h"

namespace rlf {

struct ModelRewardOptions {
  std::string model;
  std::string tokenizer;
  int64_t label = 0;
  bool label_given = false;  // `label` was written: it wins over a gating layer
  std::vector<double> direction;
  std::string normalize = "none";
  int64_t micro_batch_size = 32;
  bool add_special_tokens = true;
  std::string dtype = "fp32";
  std::string device = "cpu";
};

ModelRewardOptions read_model_reward_options(OptionReader& reader);

class ModelReward final : public Reward {
 public:
  // Loads the model; errors name the option (model, label, direction).
  explicit ModelReward(ModelRewardOptions options);
  std::string name() const override { return "reward_model"; }
  std::vector<RewardResult> score(const RewardGroup& group) override;

 private:
  ModelRewardOptions options_;
  Policy rm_;
  RewardReadout readout_;
};

// The reward types of this library, for make_reward_set's `extra`:
// "reward_model" and "process_reward" (rm/process_reward.h).
RewardFactories model_reward_factories();

}  // namespace rlf

// What the reward-model kinds of run (trainer.kind = "rm": pairwise and
// multi-objective reward models, train/run_kind_reward_model.cpp; process
// reward models, train/run_kind_process.cpp) share: the model they train is
// the (warmed) backbone with a score head.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "train/run_context.h"
#include "util/json_util.h"

namespace rlf {

// A causal LM policy becomes a classifier on its backbone with one output per
// attribute (one Bradley-Terry head without attributes); a classifier loaded
// as the model trains on. Throws rlf::Error when the outputs do not match.
void add_score_head(RunContext& r, const std::vector<std::string>& attributes, bool warmed);
// reward_model.train_backbone = false: only the score head trains; then
// lora.enabled: adapters on the backbone, the score head trained beside them.
void freeze_backbone_and_attach_lora(RunContext& r);
// The progress bar's loss and accuracy of a reward-model step.
std::vector<std::pair<std::string, double>> reward_model_progress(const Json& metrics);

}  // namespace rlf

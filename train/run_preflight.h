// What a training run checks before it writes anything (run.out_dir/config.json,
// run.out_dir/init, a warm-start cache): every path the config names is there
// and is what its key says, every directory the run writes can be created, and
// every companion a feature needs is present — so a bad config fails in a
// second with its key named, not after the warm start with a run directory
// half made. Errors name the key (and the config file).
//
//   run.out_dir             a directory or a path that can be created, not a
//                           directory the run reads (the model, an adapter, ...)
//   run.warm_start_cache    likewise, when it is used
//   lora.adapter            lora.enabled: a PEFT adapter directory
//   distill.teacher_path    distill.teacher = "model": a model
//   value.model             algorithm.credit = "gae": a model
//   run.eval_kl_model       a model
//
// (model.path, model.tokenizer, the data files and [critic]'s model are loaded
// before anything is written; [critic] itself is required by the config:
// train/train_config.cpp.)
#pragma once

#include <vector>

#include "data/examples.h"
#include "model/transformer.h"
#include "train/train_config.h"

namespace rlf {

// The checks above: they need no model, so they run first. `writes`: this
// process writes the run's files (one process, or rank 0 of several); the
// others skip the checks of the directories they do not write.
void check_run_paths(const TrainConfig& cfg, bool writes = true);

// The checks that need the loaded policy and training prompts, made before
// the first write: lora.adapter fits `policy` (unless trainer.kind = "rm",
// whose adapters go on the backbone once its head is on), and a [critic] of
// type "simple_gt" has reference answers to give (else every critique fails).
void check_run_companions(const TrainConfig& cfg, CausalLMImpl& policy, const std::vector<PromptExample>& train);

}  // namespace rlf

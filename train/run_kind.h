// RunKind: what one kind of training run ([trainer] kind) adds to the spine
// of run_training (train/train_run.h). The spine loads the policy, rewards,
// environment, prompts and SFT pairs (RunContext), warm-starts, builds the
// KL reference, resumes, runs the steps, saves and reports; a kind answers
// the questions in between, in the order the spine asks them:
//
//   check_world      before the policy loads: what this kind needs of the ranks
//   load_models      after the rewards and environment: models checked before
//                    anything long runs (RL: the critic of refinement/lessons,
//                    the gold reward watch)
//   load_data        after the prompts and SFT pairs: the kind's own records,
//                    every one checked (preference pairs, step-labelled solutions)
//   load_companions  after the run directory and the checkpoint to resume from
//                    are known (RL: value.model)
//   warm_starts      whether an [sft] warm start runs (train/warm_start.h)
//   prepare          before the KL reference: LoRA adapters on a causal LM
//   needs_reference  whether the spine builds a KL reference
//   start            after it: a reward model's score head (then its LoRA),
//                    PPO's value head, Monte-Carlo step labels, the loss
//                    terms, the trainer and the step source
//   next ...         the step source: episodes, data cursor, checkpoint state
//   held_out_*       the kind's held-out measurement before/after the steps
//   progress, table_keys, print_held_out: headline metrics
//
// One file per kind: run_kind_rl.cpp, run_kind_sft.cpp,
// run_kind_preference.cpp (DPO), run_kind_reward_model.cpp (pairwise and
// multi-objective reward models), run_kind_process.cpp (process reward
// models); make_run_kind() reads the config's kind, once. A new kind is a new
// file with its make_<name>_kind(), declared below and called from
// make_run_kind() (train/run_kind.cpp).
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "data/data_cursor.h"
#include "env/episode.h"
#include "train/metrics.h"
#include "train/run_context.h"
#include "train/train_config.h"
#include "train/train_run.h"
#include "train/trainer.h"
#include "train/value_model.h"
#include "util/json_util.h"

namespace rlf {

class RunKind {
 public:
  virtual ~RunKind() = default;
  virtual const char* name() const = 0;  // TrainRunSummary::kind: "grpo" | "sft" | "dpo" | "rm"

  // Loading, in the spine's order (see above).
  virtual void check_world(int64_t /*world*/) const {}
  virtual void load_models(RunContext&) {}
  virtual void load_data(RunContext&) {}
  virtual void load_companions(RunContext&) {}
  virtual bool warm_starts() const { return true; }
  virtual void prepare(RunContext& r) = 0;
  virtual bool needs_reference() const = 0;
  // `resumed`: the run continues from a checkpoint.
  virtual void start(RunContext& r, CausalLM reference, bool warmed, bool resumed) = 0;
  virtual Trainer& trainer() = 0;
  virtual ValueModel* value() { return nullptr; }  // PPO's critic, updated after the policy
  virtual CausalLM rollout_model() { return nullptr; }  // asynchronous rollouts: the copy they sample with
  // Models beside the policy that a checkpoint keeps without an optimizer, by directory name (RL's distill
  // EMA teacher: "ema"); CheckpointTargets::models.
  virtual std::map<std::string, CausalLM> checkpoint_models() { return {}; }

  // The step source.
  virtual std::vector<Episode> next(int64_t step, int32_t version, Json& metrics) = 0;
  virtual DataCursor& cursor() = 0;
  virtual std::vector<SampleRecord> samples() const { return {}; }
  // State beyond the data cursor that a checkpoint keeps (under extra.source), or null.
  virtual Json extra_state() const { return nullptr; }
  virtual void restore_extra_state(const Json&) {}
  // Reports written to run.out_dir/curation/<name> with each checkpoint ([curation]'s prompt pool).
  virtual std::vector<std::pair<std::string, Json>> reports(int64_t) const { return {}; }
  // Tokens a step generated with the policy (run.rollout_token_budget); nullopt: the kind generates none.
  virtual std::optional<int64_t> generated_tokens(const Json&) const { return std::nullopt; }
  // Watches a finished step's metrics (may add "notes"); run.max_failed_steps applies when `counts_failed_steps`.
  virtual void observe(int64_t /*step*/, Json& /*metrics*/) {}
  virtual bool counts_failed_steps() const { return false; }

  // Measurement: greedy pass@1 (and run.eval_kl_model) on the eval prompts when `measures_pass1`;
  // the kind's own held-out metrics (null: none).
  virtual bool measures_pass1() const { return true; }
  virtual Json held_out_before(RunContext&) { return nullptr; }
  // After the last step, before the final checkpoint; `resumed_done`: a resumed run with no steps left.
  virtual void finish_steps(RunContext&, const std::optional<std::filesystem::path>& /*resume_from*/,
                            bool /*resumed_done*/) {}
  virtual void save_model_extras(const std::filesystem::path& /*model_dir*/) const {}
  virtual Json held_out_after(RunContext&) { return nullptr; }

  // Headlines: the progress bar's values, the table's metrics, the held-out line.
  virtual std::vector<std::pair<std::string, double>> progress(const Json& metrics) const = 0;
  virtual std::vector<std::string> table_keys() const = 0;
  virtual void print_held_out(const TrainRunSummary&) const {}
  virtual void fill_summary(TrainRunSummary&) const {}  // fields only this kind sets (process)
};

// The kind of run `cfg` asks for ([trainer] kind, [process.data]).
std::unique_ptr<RunKind> make_run_kind(const TrainConfig& cfg);

// The kinds' constructors (one file each).
std::unique_ptr<RunKind> make_rl_kind(const TrainConfig& cfg);
std::unique_ptr<RunKind> make_sft_kind(const TrainConfig& cfg);
std::unique_ptr<RunKind> make_preference_kind(const TrainConfig& cfg);    // dpo
std::unique_ptr<RunKind> make_reward_model_kind(const TrainConfig& cfg);  // rm with [preference.data]
std::unique_ptr<RunKind> make_process_kind(const TrainConfig& cfg);       // rm with [process.data]

// lora.enabled on a kind that trains a causal LM: an error naming trainer.kind
// when the policy is a classifier, else RunContext::attach_lora().
void attach_lora_to_lm(RunContext& r);
// Trainer options of the offline kinds: the run's, without entropy and
// rollout-agreement logging (their responses were not sampled by this policy).
TrainerOptions offline_trainer_options(const TrainConfig& cfg);

}  // namespace rlf

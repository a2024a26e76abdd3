// The training configuration (`rlf train CONFIG.toml [--set key=value ...]`):
// each key is declared once in train_config.cpp, bound to the member of the
// option structs below that it sets (config/config_binding.h), with its unit,
// range and meaning. The one table gives the schema (`rlf config train`,
// docs/config.md; unknown keys, wrong types, ranges, choices) and the loader.
// Every default is defined once, in the option structs below, and the schema
// reads it from them; checks that span keys follow the bindings.
//
// Sections: [trainer] [model] [data] [[reward]] [env] [rollout] [algorithm]
// [refine] [critic] [distill] [replay] [curation] [optim] [run] and optionally [sft] (a supervised warm
// start before RL, or the data of an SFT run). [data], [sft.data],
// [[reward]], [env] and [critic] tables are validated by their own
// libraries' parsers.
//
// Run kinds ([trainer] kind):
//   "grpo"  RL: episodes through the environment, rewards, credit, the policy
//           loss term (+ kl, entropy); needs [data] and [[reward]] (or an
//           environment that gives rewards)
//   "sft"   supervised fine-tuning alone: the ce term on [sft.data] pairs for
//           run.steps steps with [optim]'s schedule; [data] + [[reward]],
//           when given, measure held-out pass@1 before and after
//   "dpo"   offline preference optimisation (DPO, IPO, hinge, SimPO, SPPO;
//           [preference]): the pref term on [preference.data] (prompt,
//           chosen, rejected) triples for run.steps steps, reference
//           log-probs computed once per pair and cached; held-out preference
//           accuracy before and after; optional [sft] warm start; [data] +
//           [[reward]], when given, measure held-out pass@1 as for "sft"
//   "rm"    a reward model ([reward_model]): the policy's backbone with a
//           score head (after an optional [sft] warm start), trained with the
//           Bradley-Terry loss (the rm term) on [preference.data] pairs;
//           held-out pairwise accuracy, margin and calibration before and
//           after; saved as a Hugging Face *ForSequenceClassification
//           directory in each checkpoint (rm/reward_model.h); [data] +
//           [[reward]] only serve the warm start's early stop
// PPO is "grpo" with algorithm.credit = "gae": a critic ([value],
// train/value_model.h) gives GAE advantages, usually with the KL in the
// reward (fixed or adaptive) and whitened advantages.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "algorithms/credit.h"
#include "algorithms/kl.h"
#include "algorithms/kl_controller.h"
#include "algorithms/loss_aggregation.h"
#include "algorithms/nft_loss.h"
#include "algorithms/policy_loss.h"
#include "model/lora.h"
#include "algorithms/rollout_correction.h"
#include "algorithms/preference_loss.h"
#include "data/decontamination.h"
#include "data/preference_dataset.h"
#include "data/prompt_pool.h"
#include "data/step_dataset.h"
#include "data/prompt_dataset.h"
#include "data/sft_dataset.h"
#include "env/env_registry.h"
#include "feedback/critic_config.h"
#include "train/critique_credit.h"
#include "rewards/reward_aggregation.h"
#include "rollout/sampling.h"
#include "rm/gating.h"
#include "train/c10d_reducer.h"
#include "config/config_schema.h"
#include "config/enum_names.h"
#include "train/distillation.h"
#include "train/feedback_conditioning.h"
#include "train/refinement.h"
#include "train/rejection_sampling.h"
#include "train/lessons.h"
#include "train/replay_buffer.h"
#include "model/memory_levers.h"
#include "train/trainer.h"
#include "train/value_model.h"

namespace rlf {

// The schema of every key ([data], [sft.data], [[reward]], [env] and
// [critic] are validated by their own libraries' parsers).
const ConfigSchema& train_config_schema();

// What a run trains (trainer.kind). Rl is every method that learns from the
// policy's own rollouts — GRPO, PPO, RAFT, NFT, online DPO, ... — whose
// trainer.kind is "grpo" for history; Sft, Dpo (offline preference pairs) and
// Rm (reward and process reward models) learn from datasets.
enum class TrainerKind { Rl, Sft, Dpo, Rm };
const char* trainer_kind_name(TrainerKind kind);  // "grpo", "sft", "dpo", "rm"

// algorithm.kl_reference: "rl_start", the policy as RL starts (after any SFT
// warm start); "initial", the model as loaded (model.path).
enum class KlReference { RlStart, Initial };
const EnumNames<KlReference>& kl_reference_names();

// process.labels: "given", the records' labels; "monte_carlo", the training
// solutions' labels estimated by the policy's rollouts (train/process_steps.h),
// scored by the [[reward]]s.
enum class ProcessLabels { Given, MonteCarlo };
const EnumNames<ProcessLabels>& process_labels_names();

// What the RL step source needs ([rollout] and the RL part of [algorithm]).
struct RlStepOptions {
  int64_t prompts_per_step = 8;          // groups per step
  int64_t train_prompts = 0;             // RL draws from the first N training prompts, epoch after epoch (0 = all)
  int64_t group_size = 8;                // episodes per prompt (G)
  SamplingParams sampling = [] {         // per turn; max_new_tokens 128 in run configs
    SamplingParams p;
    p.max_new_tokens = 128;
    return p;
  }();
  int64_t max_batch_rows = 64;           // sequences the engine decodes together
  int64_t max_staleness = 0;             // asynchronous rollouts: batches sampled up to this many steps ahead of
                                         // the update, on a copy of the weights (train/rollout_pipeline.h); 0 = synchronous
  RewardAggregation reward_aggregation = RewardAggregation::sum_then_normalize;
  std::string accuracy_reward;           // component whose score > 0.5 counts as correct ("" = the first)
  std::string gold_reward;               // a held-out component (weight 0) watched for over-optimisation ("" = off;
                                         // train/diagnostics.h GoldRewardWatch)
  algo::CreditOptions credit;            // episode | turn | token, gamma, the advantage estimator
  double kl_beta = 0.0;                  // > 0: KL to the reference (in the loss or the reward)
  algo::KlEstimator kl_estimator = algo::KlEstimator::K3;
  bool kl_in_reward = false;             // algorithm.kl_placement = "reward": -beta*k per token in the reward
  double kl_target = 0.0;                // > 0: adaptive kl_beta towards this KL per episode (algorithms/kl_controller.h)
  double kl_horizon = 10000;             // episodes over which the adaptive controller's full error moves beta by 100%
  bool dynamic_sampling = false;         // DAPO: drop zero-variance groups and refill
  LeverMode sampling_replay = LeverMode::Auto;  // trainer.sampling_replay (train/sampling_replay.h)
  bool recompute_old_logprobs = false;   // the trainer recomputes the on-policy episodes' old log-probs before the
                                         // update; the rollout's become Episode::behaviour_logprob (rollout correction)
  double seed_alpha = 0.0;               // SEED-GRPO: advantages times 1 - alpha * SE / log G (0 = off;
                                         // algorithms/semantic_entropy.h)
  int64_t dynamic_sampling_max_rounds = 4;
  uint64_t seed = 0;                     // seeds sampling and the data order (= run.seed, set by the config)
  bool add_special_tokens = true;        // add BOS when encoding prompts (false when a chat template wrote it)
  int64_t reference_micro_batch_size = 8;  // sequences per reference forward (= algorithm.micro_batch_size)
  bool reference_logprobs = true;        // not a key, set by the RL run kind: step 4 computes the reference's log-probs
                                         // only when a loss term or the KL-in-reward reads them (a frozen distill
                                         // teacher borrows the reference without them)
  EnvConfig env;                         // [env]
  RefineOptions refine;                  // [refine]: critique-guided refinement (train/refinement.h)
  CritiqueCreditOptions span_credit;     // [span_credit]: critique-to-token credit (train/critique_credit.h)
  CriticConfig critic;                   // [critic]: who writes critiques (feedback/critic_config.h)
  DistillOptions distill;                // [distill]: self-distillation from feedback (train/distillation.h)
  ReplayOptions replay;                  // [replay]: experience replay of successes (train/replay_buffer.h)
  LessonOptions lessons;                 // [lessons]: lessons of similar tasks in rollout prompts (train/lessons.h)
  RaftOptions raft;                      // [raft]: rejection-sampling fine-tuning (train/rejection_sampling.h)
  FcpOptions fcp;                        // [fcp]: feedback-conditional policy (train/feedback_conditioning.h)
  PromptPoolOptions pool;                // [curation]: difficulty pool, unreliable-reward filter (data/prompt_pool.h)

  // Throws rlf::Error naming the key.
  void validate() const;
};

// The loss terms of an RL run ([algorithm]).
struct RlLossOptions {
  algo::PolicyLossOptions policy;        // objective, clipping, ratio level, off-policy safeguards
  algo::RolloutCorrectionOptions correction;  // TIS / sequence masking against the rollout's log-probs
  bool nft = false;                      // algorithm.policy_loss = "nft": the nft term replaces the policy term
  algo::NftOptions nft_options;          // its negative weight and clamp
  algo::AggregationOptions aggregation;  // token_mean | seq_mean_token_mean | seq_mean_token_sum_norm
  double entropy_coef = 0.0;             // entropy bonus (0 = off)
  KlReference kl_reference = KlReference::RlStart;  // algorithm.kl_reference
};

struct SftOptions {
  bool enabled = false;          // sft.data present
  SftDatasetOptions data;        // [sft.data]
  int64_t steps = 0;             // warm start: optimiser steps (trainer.kind = "sft" uses run.steps)
  int64_t batch_size = 16;       // (prompt, response) pairs per step
  int64_t micro_batch_size = 16;
  double lr = 1e-3;              // warm start: constant learning rate (trainer.kind = "sft" uses [optim])
  // Stop the warm start once greedy pass@1 on the first stop_eval_prompts
  // training prompts reaches stop_at_pass1, checked every stop_eval_every steps
  // (0 = run all `steps`): "weak but not hopeless" reached by measurement, not
  // by a step count that any numeric change would move.
  double stop_at_pass1 = 0.0;
  int64_t stop_eval_every = 25;
  int64_t stop_eval_prompts = 200;
};

// [preference]: the DPO family (trainer.kind = "dpo").
struct PreferenceOptions {
  bool enabled = false;               // preference.data present
  PreferenceDatasetOptions data;      // [preference.data]
  algo::PreferenceLossOptions loss = [] {  // preference.loss, beta, label_smoothing, simpo_gamma
    algo::PreferenceLossOptions o;
    return o;
  }();
  int64_t batch_size = 16;            // pairs per step (each pair is two sequences)
  bool online = false;                // trainer.kind = "grpo": the pref term replaces the policy term, on each
                                      // rollout group's best and worst episode (online / iterative DPO)
};

// [process]: trainer.kind = "rm" on step-labelled solutions (a process reward model).
struct ProcessOptions {
  bool enabled = false;               // process.data present
  StepDatasetOptions data;            // [process.data]
  int64_t batch_size = 32;            // solutions per step
  ProcessLabels labels = ProcessLabels::Given;  // process.labels
  int64_t mc_rollouts = 8;            // monte_carlo: rollouts per step
  double mc_temperature = 1.0;        // monte_carlo: their sampling temperature
};

// [reward_model]: trainer.kind = "rm".
struct RewardModelOptions {
  double margin = 0.0;          // m >= 0 in -log sigmoid(r_c - r_r - m)
  bool train_backbone = true;   // false: only the score head learns (a linear probe on the frozen backbone)
  std::vector<std::string> attributes;  // [] = one Bradley-Terry head; else one regression head per rated
                                        // attribute (multi-objective: ArmoRM's first stage)
  bool gating = false;          // with attributes: fit ArmoRM's gating layer on the pairs after the heads
  GatingOptions gating_options; // gating_hidden, gating_steps, gating_lr, gating_temperature
};

struct RunOptions {
  int64_t steps = 100;           // trainer steps
  uint64_t seed = 0;             // run.seed: every random stream of the run derives from it (util/seed.h)
  std::filesystem::path out_dir = "runs/rlf";
  int64_t checkpoint_every = 0;  // 0 = only at the end
  int64_t keep_checkpoints = 3;
  int64_t samples_every = 10;    // 0 = never
  bool tensorboard = true;       // also write metrics.jsonl's numbers as TensorBoard event files in out_dir
  int64_t samples_per_step = 4;
  int64_t eval_every = 0;        // 0 = only before and after
  int64_t threads = 0;           // 0 = all cores
  std::string eval_kl_model;     // a model directory (same tokenizer): held-out KL(policy || it) before and after
                                 // (train/heldout_kl.h; "" = off)
  bool sft_control = false;      // after RL: the post-SFT policy trained by SFT alone for the same wall time
  std::string warm_start_cache;  // a directory: a warm start with the same [model], [data], [sft] and seed is
                                 // trained once and loaded by later runs ("" = off; not with sft_control)
  int64_t rollout_token_budget = 0;  // RL: end the run once the steps generated this many tokens (rollouts,
                                     // refinements, critiques by the policy); 0 = run.steps decides
  int64_t max_failed_steps = 3;  // RL: stop with an error after this many steps in a row in which every
                                 // episode ended with an environment error (train/failed_steps.h); 0 = never
};

struct ModelOptions {
  std::string path;              // HF directory or llama2.c .bin (required unless random_init)
  std::string tokenizer;         // "" = the model's own
  std::string dtype = "fp32";    // fp32 | bf16 | auto; fp32 keeps rollout/trainer log-probs within 2e-5
  std::string device = "cpu";    // cpu | cuda | cuda:N
  bool fast_cpu_path = true;     // CausalLMImpl::set_fast_cpu_path for the policy and the reference
  bool pack_weights = true;      // CausalLMImpl::set_pack_weights: rollouts decode with packed weight panels
  std::string random_init;       // "" = load `path`; a preset ("demo"): a fresh random model with a
                                 // character tokenizer, written to run.out_dir/init and loaded from there
  int64_t random_init_context = 128;  // random_init: its context (max_position_embeddings); the weights are the
                                      // same at any value
};

// [lora]: low-rank adapters on the policy (model/lora.h, docs/lora.md).
struct LoraTrainOptions {
  bool enabled = false;
  LoraOptions adapter;           // rank 8, alpha 16, dropout 0, targets q_proj + v_proj, rslora off
  std::string init_from;         // lora.adapter: a PEFT adapter directory to start from ("" = fresh adapters)
  bool merge_rollout = false;    // rollouts (no autograd) use W + s·B·A, merged once per update
};

struct TrainConfig {
  Json raw;                       // the validated config (defaults filled), saved with the run
  std::string source;             // where it came from (for messages)
  TrainerKind kind = TrainerKind::Rl;
  MemoryLevers memory;            // [trainer] logprob_recompute, checkpoint_activations: auto = on where they help
  ModelOptions model;
  bool has_data = false;          // [data] given
  PromptDatasetOptions data;
  Json rewards = Json::array();   // [[reward]] tables
  RlStepOptions rl;
  RlLossOptions loss;
  TrainerOptions trainer;         // epochs, mini-batches, micro-batch size, optimizer, schedule
  RunOptions run;
  SftOptions sft;
  PreferenceOptions preference;
  ProcessOptions process;
  RewardModelOptions reward_model;
  ValueOptions value;             // [value]: PPO's critic (algorithm.credit = "gae")
  DistOptions dist;               // [dist]: data-parallel ranks (torchrun)
  LoraTrainOptions lora;          // [lora]: train low-rank adapters instead of the whole policy
  DecontaminationOptions decontamination;  // [curation]: training prompts overlapping eval sets dropped at load

  // The model directory the run loads (model.path, or out_dir/init with random_init).
  std::filesystem::path model_path() const;
  // An RL run whose refinement, lessons, span credit, distillation context ({critique}) or feedback-conditional
  // policy ask a critic ([critic]) for critiques.
  bool asks_critic() const {
    return kind == TrainerKind::Rl && (rl.refine.enabled || rl.lessons.enabled || rl.span_credit.enabled ||
                                       rl.distill.needs_critic() || rl.fcp.enabled);
  }
};

// Reads a TOML file, applies --set overrides, validates everything and builds
// the options. Errors name the file and the key.
TrainConfig load_train_config(const std::filesystem::path& path, const std::vector<std::string>& overrides);

// Same, from an already parsed JSON object (the embedded demo, tests).
TrainConfig train_config_from_json(const Json& config, const std::string& source);

}  // namespace rlf

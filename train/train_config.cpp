#include "train/train_config.h"

#include "model/cpu_features.h"
#include "config/toml_config.h"
#include "util/error.h"

namespace rlf {

namespace {

std::vector<std::string> names_of_estimators() {
  return {"grpo", "dr_grpo", "batch_std", "rloo", "reinforce_pp", "reinforce_pp_baseline"};
}

}  // namespace

const char* trainer_kind_name(TrainerKind kind) {
  switch (kind) {
    case TrainerKind::Sft: return "sft";
    case TrainerKind::Dpo: return "dpo";
    case TrainerKind::Rm: return "rm";
    default: return "grpo";
  }
}

std::filesystem::path TrainConfig::model_path() const {
  return model.random_init.empty() ? std::filesystem::path(model.path) : run.out_dir / "init";
}

const ConfigSchema& train_config_schema() {
  using T = OptionType;
  static const ConfigSchema schema = [] {
    const TrainConfig d;  // every default, from the option structs
    const RlStepOptions& r = d.rl;
    const TrainerOptions& t = d.trainer;
    const SftOptions& sft = d.sft;
    ConfigSchema s = {
        // [trainer]
        {"trainer.kind", T::String, trainer_kind_name(d.kind), "",
         "what the run trains: grpo = RL through the environment with rewards; sft = supervised on [sft.data] alone; "
         "dpo = offline preference optimisation on [preference.data] (the DPO family, [preference]); rm = a reward "
         "model trained on [preference.data] ([reward_model]), or a process reward model on [process.data]",
         {"grpo", "sft", "dpo", "rm"}},
        // [model]
        {"model.path", T::String, d.model.path, "",
         "policy to train: a Hugging Face directory or a llama2.c .bin (required unless model.random_init)"},
        {"model.tokenizer", T::String, d.model.tokenizer, "",
         "tokenizer.json, a directory with one, or tok*.bin (\"\" = the model's)"},
        {"model.dtype", T::String, d.model.dtype, "",
         "compute dtype; bf16 keeps fp32 master weights in the optimizer; auto = bf16 where it is native (a GPU, "
         "AMX or AVX512_BF16), else fp32. The default stays fp32: rollout and trainer log-probs then agree to 2e-5",
         {"fp32", "bf16", "auto"}},
        {"model.device", T::String, d.model.device, "", "cpu, cuda or cuda:N"},
        {"model.fast_cpu_path", T::Bool, d.model.fast_cpu_path, "",
         "fp32 on CPU: fused kernels for RMSNorm, RoPE + attention and SwiGLU in rollouts and updates (docs/DESIGN.md); "
         "false = LibTorch module path"},
        {"model.pack_weights", T::Bool, d.model.pack_weights, "",
         "fp32 on CPU: rollouts multiply by a copy of the policy's weights packed into column panels, made at each "
         "rollout's start and freed at its end (faster decoding, the weights' size again in memory meanwhile); "
         "false = no copy"},
        {"model.random_init", T::String, d.model.random_init, "",
         "\"\" = load model.path; \"demo\" = a fresh random 0.6M-parameter Llama with a character tokenizer, seeded by "
         "run.seed, written to run.out_dir/init",
         {"", "demo"}},
        // [data], [[reward]] and [env] are validated by their own libraries.
        {"data", T::Any, Json::object(), "", "prompt dataset (docs/data.md): path, preset, fields, templates, split"},
        {"reward", T::Any, Json::array(), "", "array of reward tables (docs/rewards.md): type, name, weight, options"},
        {"env", T::Any, Json::object(), "",
         "environment (docs/environments.md): type (single_turn, calculator, guess, try_again, reflect_retry, external, agent), max_turns, ..."},
        // [rollout]
        SchemaEntry{"rollout.prompts_per_step", T::Int, r.prompts_per_step, "prompts", "groups per step"}.in(1, 1e6),
        SchemaEntry{"rollout.group_size", T::Int, r.group_size, "episodes", "episodes sampled per prompt (G)"}.in(1, 65536),
        SchemaEntry{"rollout.max_new_tokens", T::Int, r.sampling.max_new_tokens, "tokens", "length limit of each policy turn"}.in(1, 1e7),
        SchemaEntry{"rollout.temperature", T::Float, r.sampling.temperature, "", "sampling temperature (0 = greedy)"}.in(0, 100),
        SchemaEntry{"rollout.top_k", T::Int, r.sampling.top_k, "tokens", "top-k filter (0 = off)"}.in(0, 1e9),
        SchemaEntry{"rollout.top_p", T::Float, r.sampling.top_p, "", "nucleus filter (1 = off)"}.in(1e-9, 1),
        SchemaEntry{"rollout.min_p", T::Float, r.sampling.min_p, "", "min-p filter (0 = off)"}.in(0, 0.999999),
        {"rollout.stop", T::StringList, Json(r.sampling.stop_strings), "",
         "stop strings ending a turn (excluded from its text; the environment may add its own)"},
        SchemaEntry{"rollout.max_batch_rows", T::Int, r.max_batch_rows, "sequences", "sequences decoded together"}.in(1, 65536),
        SchemaEntry{"rollout.max_staleness", T::Int, r.max_staleness, "steps",
         "asynchronous rollouts: the rollouts of the next steps overlap this step's update, sampled with weights at "
         "most this many steps old (docs/training.md; 0 = synchronous)"}.in(0, 64),
        // [algorithm]
        {"algorithm.advantage", T::String, std::string(algo::advantage_estimator_name(r.credit.advantage.estimator)), "",
         "advantage estimator (docs/algorithms.md)", names_of_estimators()},
        SchemaEntry{"algorithm.std_eps", T::Float, r.credit.advantage.std_eps, "", "added to a standard deviation before dividing"}.in(0, 1),
        {"algorithm.credit", T::String, std::string(algo::credit_mode_name(r.credit.mode)), "",
         "how rewards reach tokens: one return per episode, per-turn returns, per-token returns, or PPO's GAE with a "
         "critic ([value]) (docs/algorithms.md)",
         {"episode", "turn", "token", "gae"}},
        SchemaEntry{"algorithm.gamma", T::Float, r.credit.gamma, "", "discount per turn (credit = turn) or per token (token, gae)"}.in(1e-9, 1),
        SchemaEntry{"algorithm.lambda", T::Float, r.credit.lambda, "", "credit = gae: GAE's lambda (1 = Monte-Carlo returns, 0 = one-step TD)"}.in(0, 1),
        {"algorithm.value_level", T::String, r.credit.turn_values ? "turn" : "token", "",
         "credit = gae: one critic value per policy token, or per turn (at its first token; multi-turn episodes)",
         {"token", "turn"}},
        {"algorithm.whiten_advantages", T::Bool, r.credit.whiten, "",
         "whiten the advantages over the step's policy tokens (PPO's advantage whitening)"},
        {"algorithm.reward_aggregation", T::String, aggregation_name(r.reward_aggregation), "",
         "how reward components combine (TRL)", {"sum_then_normalize", "normalize_then_sum"}},
        {"algorithm.accuracy_reward", T::String, r.accuracy_reward, "",
         "reward component whose score > 0.5 counts as correct (\"\" = the first)"},
        {"algorithm.gold_reward", T::String, r.gold_reward, "",
         "a held-out reward component (weight 0: it never trains) logged as diag/gold_reward; a warning when the "
         "trained reward rises while it falls over 20 steps (\"\" = off)"},
        {"algorithm.policy_loss", T::String, std::string(algo::policy_objective_name(d.loss.policy.objective)), "",
         "the policy objective (docs/algorithms.md): PPO/GRPO's clipped surrogate, CISPO, DPPO's trust region "
         "(binary TV or KL), Clip-Cov, KL-Cov, or negative-aware fine-tuning",
         {"clip", "cispo", "dppo_tv", "dppo_kl", "clip_cov", "kl_cov", "nft"}},
        SchemaEntry{"algorithm.eps_low", T::Float, d.loss.policy.eps_low, "", "lower clip of the importance ratio (1 - eps_low); cispo: of the IS weight; dppo_*: the trust region's delta for A <= 0"}.in(0, 0.999999),
        SchemaEntry{"algorithm.eps_high", T::Float, d.loss.policy.eps_high, "", "upper clip (1 + eps_high); DAPO clip-higher uses 0.28; cispo: of the IS weight; dppo_*: delta for A > 0"}.in(0, 100),
        SchemaEntry{"algorithm.dual_clip", T::Float, d.loss.policy.dual_clip, "",
         "dual-clip bound c > 1 for negative advantages (0 = off)"}.in(0, 1e6),
        {"algorithm.ratio_level", T::String, std::string(algo::ratio_level_name(d.loss.policy.ratio_level)), "",
         "importance ratio per token (PPO/GRPO) or per sequence (GSPO)", {"token", "sequence"}},
        SchemaEntry{"algorithm.off_policy_ratio_cap", T::Float, d.loss.policy.ratio_cap, "",
         "off-policy tokens: truncate the importance ratio at this value (0 = off)"}.in(0, 1e6),
        SchemaEntry{"algorithm.off_policy_mask_low", T::Float, d.loss.policy.mask_low, "",
         "off-policy tokens: drop tokens whose ratio is below this (0 = off)"}.in(0, 0.999999),
        SchemaEntry{"algorithm.off_policy_mask_high", T::Float, d.loss.policy.mask_high, "",
         "off-policy tokens: drop tokens whose ratio is above this (0 = off)"}.in(0, 1e6),
        SchemaEntry{"algorithm.dppo_ratio_cap", T::Float, d.loss.policy.dppo_ratio_cap, "",
         "dppo_tv, dppo_kl: truncation of the detached importance weight"}.in(1e-9, 1e9),
        SchemaEntry{"algorithm.clip_cov_fraction", T::Float, d.loss.policy.clip_cov_fraction, "",
         "clip_cov: share of loss tokens detached (at least one)"}.in(1e-12, 1),
        SchemaEntry{"algorithm.clip_cov_low", T::Float, d.loss.policy.clip_cov_low, "",
         "clip_cov: detached tokens have a covariance above this"}.in(-1e12, 1e12),
        SchemaEntry{"algorithm.clip_cov_high", T::Float, d.loss.policy.clip_cov_high, "",
         "clip_cov: ... and below this"}.in(-1e12, 1e12),
        SchemaEntry{"algorithm.kl_cov_fraction", T::Float, d.loss.policy.kl_cov_fraction, "",
         "kl_cov: share of loss tokens (the largest covariances, at least one) penalised"}.in(1e-12, 1),
        SchemaEntry{"algorithm.kl_cov_coef", T::Float, d.loss.policy.kl_cov_coef, "",
         "kl_cov: weight of the penalty |log pi - log pi_old|"}.in(0, 1e6),
        SchemaEntry{"algorithm.nft_neg_weight", T::Float, d.loss.nft_options.neg_weight, "",
         "nft: weight of the incorrect samples' loss (0 = fine-tuning on correct samples alone)"}.in(0, 1e6),
        SchemaEntry{"algorithm.nft_clamp_negative", T::Float, d.loss.nft_options.clamp_negative, "",
         "nft: floor of the implicit negative policy's ratio (value clamped, gradient kept)"}.in(1e-9, 1e6),
        {"algorithm.recompute_old_logprobs", T::Bool, r.recompute_old_logprobs, "",
         "the trainer recomputes the rollout episodes' old log-probs before the update (one more forward); the "
         "rollout's are kept for the rollout correction"},
        SchemaEntry{"algorithm.tis_cap", T::Float, d.loss.correction.tis_cap, "",
         "truncated importance sampling: each rollout token's loss times min(pi_old / pi_rollout, tis_cap) "
         "(0 = off; needs recompute_old_logprobs)"}.in(0, 1e6),
        SchemaEntry{"algorithm.mismatch_mask_low", T::Float, d.loss.correction.mask_low, "",
         "sequences whose geometric-mean pi_old / pi_rollout is below this carry no loss (0 = off; needs "
         "recompute_old_logprobs)"}.in(0, 0.999999),
        SchemaEntry{"algorithm.mismatch_mask_high", T::Float, d.loss.correction.mask_high, "",
         "... or above this (0 = off)"}.in(0, 1e6),
        SchemaEntry{"algorithm.seed_alpha", T::Float, r.seed_alpha, "",
         "SEED-GRPO: each group's advantages times 1 - alpha * SE / log G, SE the entropy over clusters of "
         "equivalent final answers (0 = off)"}.in(0, 1),
        {"algorithm.loss_aggregation", T::String, std::string(algo::loss_aggregation_name(d.loss.aggregation.mode)), "",
         "per-token losses to one number", {"token_mean", "seq_mean_token_mean", "seq_mean_token_sum_norm"}},
        SchemaEntry{"algorithm.kl_beta", T::Float, r.kl_beta, "", "weight of the KL to the frozen reference (0 = no reference loaded)"}.in(0, 1e6),
        {"algorithm.kl_estimator", T::String, std::string(algo::kl_estimator_name(r.kl_estimator)), "", "KL estimator",
         {"k1", "k2", "k3"}},
        {"algorithm.kl_placement", T::String, r.kl_in_reward ? "reward" : "loss", "",
         "KL term in the loss, or -beta*k per token in the reward", {"loss", "reward"}},
        SchemaEntry{"algorithm.kl_target", T::Float, r.kl_target, "nats",
         "kl_placement = \"reward\": adapt kl_beta so each episode's summed KL approaches this (Ziegler et al. 2019; "
         "0 = fixed kl_beta)"}.in(0, 1e6),
        SchemaEntry{"algorithm.kl_horizon", T::Float, r.kl_horizon, "episodes",
         "adaptive KL: episodes over which a full error (20%) moves kl_beta by 20%"}.in(1, 1e12),
        {"algorithm.kl_reference", T::String, d.loss.kl_reference, "",
         "the KL reference: the policy as RL starts (after the SFT warm start) or the model as loaded",
         {"rl_start", "initial"}},
        SchemaEntry{"algorithm.entropy_coef", T::Float, d.loss.entropy_coef, "", "entropy bonus weight (0 = off)"}.in(-1e6, 1e6),
        SchemaEntry{"algorithm.epochs", T::Int, t.epochs, "", "optimisation passes over each step's episodes"}.in(1, 1000),
        SchemaEntry{"algorithm.mini_batches", T::Int, t.mini_batches, "", "optimiser steps per pass"}.in(1, 1e6),
        SchemaEntry{"algorithm.micro_batch_size", T::Int, t.micro_batch_size, "sequences",
         "sequences per forward/backward (gradient accumulation)"}.in(1, 1e6),
        {"algorithm.dynamic_sampling", T::Bool, r.dynamic_sampling, "",
         "DAPO: drop groups whose rewards are all equal and refill"},
        SchemaEntry{"algorithm.dynamic_sampling_max_rounds", T::Int, r.dynamic_sampling_max_rounds, "",
         "rollout rounds per step at most"}.in(1, 1000),
        // [refine] [critic]
        {"refine.enabled", T::Bool, r.refine.enabled, "",
         "critique-guided refinement (Critique-GRPO, docs/feedback.md): failed episodes get critiques, the policy "
         "refines, correct refinements join their group"},
        {"refine.prompt", T::String, r.refine.prompt, "",
         "the refinement prompt; placeholders {prompt} {response} {critique} {reference} {explanation}"},
        {"refine.select", T::String, r.refine.select, "",
         "which refinements join their group: every correct one, or the best correct one", {"correct", "best"}},
        SchemaEntry{"refine.max_per_group", T::Int, r.refine.max_per_group, "episodes",
         "refinements joining one group at most (0 = no limit)"}.in(0, 1e6),
        SchemaEntry{"refine.gamma", T::Float, r.refine.gamma, "",
         "policy shaping p/(p + gamma) on refinement tokens (Critique-GRPO, LUFFY: 0.1)"}.in(1e-9, 1e6),
        SchemaEntry{"refine.max_critiques", T::Int, r.refine.max_critiques, "",
         "failed episodes critiqued per step at most (0 = all)"}.in(0, 1e9),
        {"critic", T::Any, Json::object(), "",
         "who writes critiques (docs/feedback.md): type = simple | simple_gt | text | template | self | model | "
         "endpoint, and the type's options"},
        // [distill]
        {"distill.enabled", T::Bool, r.distill.enabled, "",
         "self-distillation from feedback / on-policy distillation (docs/feedback.md): the loss term distill, "
         "coef * KL(student || teacher) on the student's tokens"},
        SchemaEntry{"distill.coef", T::Float, r.distill.coef, "", "weight of the distill term"}.in(1e-12, 1e6),
        {"distill.estimator", T::String, std::string(algo::kl_estimator_name(r.distill.estimator)), "",
         "KL estimator on the student's sampled tokens (distill.top_k = 0)", {"k1", "k2", "k3"}},
        SchemaEntry{"distill.top_k", T::Int, r.distill.top_k, "",
                    "0 = the sampled-token KL estimate; k >= 1 = distill.divergence on the teacher's k most likely "
                    "tokens at each position plus a tail bucket for the rest of the mass"}.in(0, 1e9),
        {"distill.divergence", T::String, std::string(algo::distill_divergence_name(r.distill.divergence)), "",
         "with distill.top_k >= 1: reverse_kl = KL(student || teacher), forward_kl = KL(teacher || student), "
         "jsd = the generalised Jensen-Shannon divergence of GKD with distill.beta",
         {"reverse_kl", "forward_kl", "jsd"}},
        SchemaEntry{"distill.beta", T::Float, r.distill.beta, "",
                    "divergence = \"jsd\": the teacher's weight in the mixture, in (0, 1) (TRL's GKD beta)"}.in(0, 1),
        {"distill.teacher", T::String, r.distill.teacher, "",
         "self = the policy with distill.context in front; model = the model at distill.teacher_path", {"self", "model"}},
        {"distill.teacher_path", T::String, r.distill.teacher_path, "",
         "teacher = \"model\": its directory (the policy's tokenizer)"},
        {"distill.context", T::String, r.distill.context, "",
         "the teacher's prompt; placeholders {prompt} {reference} {explanation} {sibling}; \"\" = by teacher: self "
         "\"The answer is {reference}.\\n{prompt}\", model \"{prompt}\""},
        {"distill.failed_only", T::Bool, r.distill.failed_only, "",
         "distill only on episodes the accuracy reward scored wrong"},
        // [replay]
        {"replay.enabled", T::Bool, r.replay.enabled, "",
         "experience replay (ARPO, docs/feedback.md): correct episodes are stored per task; a group with none gets "
         "stored ones, off-policy"},
        SchemaEntry{"replay.capacity_per_task", T::Int, r.replay.capacity_per_task, "episodes",
         "successes kept per task (the oldest go first)"}.in(1, 1e6),
        SchemaEntry{"replay.max_tasks", T::Int, r.replay.max_tasks, "tasks",
         "tasks kept at most (the one stored longest ago goes first)"}.in(1, 1e9),
        SchemaEntry{"replay.inject", T::Int, r.replay.inject, "episodes",
         "stored successes given to a group with no correct episode"}.in(1, 1e6),
        // [lessons]
        {"lessons.enabled", T::Bool, r.lessons.enabled, "",
         "lessons of similar tasks in rollout prompts (LANPO-style, docs/feedback.md): the critic's critiques of "
         "failed groups go into a pool; each prompt shows the lessons of the most similar tasks"},
        SchemaEntry{"lessons.k", T::Int, r.lessons.k, "lessons", "lessons shown per prompt at most"}.in(1, 100),
        SchemaEntry{"lessons.capacity", T::Int, r.lessons.capacity, "lessons",
         "lessons kept in the pool (the oldest go first)"}.in(1, 1e7),
        SchemaEntry{"lessons.ngram", T::Int, r.lessons.ngram, "", "word n-gram order of the prompt similarity"}.in(1, 4),
        SchemaEntry{"lessons.min_similarity", T::Float, r.lessons.min_similarity, "",
         "Jaccard similarity of the prompts below which a lesson is not shown"}.in(0, 1),
        {"lessons.line", T::String, r.lessons.line, "", "how each lesson is shown before the prompt ({lesson})"},
        SchemaEntry{"lessons.max_per_step", T::Int, r.lessons.max_per_step, "groups",
         "failed groups critiqued for lessons per step at most (0 = all)"}.in(0, 1e9),
        // [raft]
        {"raft.enabled", T::Bool, r.raft.enabled, "",
         "rejection-sampling fine-tuning (RAFT / ReST / STaR, docs/algorithms.md): each step keeps the best (or every "
         "good enough) sampled episode and trains the ce term on those alone, instead of the policy gradient"},
        {"raft.keep", T::String, r.raft.keep, "", "each group's best qualifying episode, or every qualifying one",
         {"best", "all"}},
        SchemaEntry{"raft.min_reward", T::Float, r.raft.min_reward, "",
         "an episode qualifies when its reward is at least this"}.in(-1e12, 1e12),
        // [curation] (docs/curation.md)
        {"curation.decontaminate", T::Any, d.decontamination.sources, "",
         "evaluation sets whose items training prompts must not overlap: each \"path\", \"preset:path\" or a table "
         "like [data]; overlapping [data] training prompts and [sft.data] pairs are dropped at load and listed in "
         "run.out_dir/curation/decontamination.json and decontamination_sft.json ([] = off)"},
        SchemaEntry{"curation.ngram", T::Int, d.decontamination.ngram, "words",
         "decontamination: words per n-gram (lower-cased letter/digit runs)"}.in(1, 1000),
        SchemaEntry{"curation.overlap_threshold", T::Float, d.decontamination.overlap_threshold, "",
         "decontamination: drop a prompt when more than this share of its n-grams occur in an evaluation item "
         "(0 = any shared n-gram, GPT-3's rule)"}.in(0, 0.999999),
        {"curation.difficulty_pool", T::Bool, r.pool.difficulty, "",
         "skip prompts whose last measured pass rate (accuracy reward) is <= pool_pass_low or >= pool_pass_high, "
         "and revisit them pool_revisit_after steps later; the pool is checkpointed"},
        SchemaEntry{"curation.pool_pass_low", T::Float, r.pool.pass_low, "",
         "difficulty pool: a prompt whose pass rate is at most this is parked (0 = never solved)"}.in(0, 1),
        SchemaEntry{"curation.pool_pass_high", T::Float, r.pool.pass_high, "",
         "difficulty pool: a prompt whose pass rate is at least this is parked (1 = always solved)"}.in(0, 1),
        SchemaEntry{"curation.pool_revisit_after", T::Int, r.pool.revisit_after, "steps",
         "difficulty pool: steps a parked prompt is skipped before it can be drawn again"}.in(1, 1e12),
        SchemaEntry{"curation.reward_disagreement", T::Float, r.pool.reward_disagreement, "",
         "unreliable rewards: a prompt's group disagrees when its mean trained reward and its mean "
         "algorithm.gold_reward score differ by more than this; counted per prompt in "
         "run.out_dir/curation/prompt_pool.json (0 = off)"}.in(0, 1e12),
        SchemaEntry{"curation.drop_disagreeing_after", T::Int, r.pool.drop_after, "",
         "unreliable rewards: a prompt with this many disagreements is not sampled again (0 = report only)"}.in(0, 1e12),
        // [optim]
        SchemaEntry{"optim.lr", T::Float, t.lr.lr, "", "peak learning rate"}.in(1e-30, 10),
        {"optim.schedule", T::String, lr_schedule_kind_name(t.lr.kind), "", "shape after warm-up",
         {"constant", "linear", "cosine"}},
        SchemaEntry{"optim.warmup_steps", T::Int, t.lr.warmup_steps, "steps", "linear warm-up (optimiser steps)"}.in(0, 1e12),
        SchemaEntry{"optim.lr_min", T::Float, t.lr.lr_min, "", "final learning rate of linear/cosine decay"}.in(0, 10),
        SchemaEntry{"optim.beta1", T::Float, t.optimizer.beta1, "", "AdamW first-moment decay"}.in(0, 0.999999),
        SchemaEntry{"optim.beta2", T::Float, t.optimizer.beta2, "", "AdamW second-moment decay"}.in(0, 0.999999),
        SchemaEntry{"optim.eps", T::Float, t.optimizer.eps, "", "AdamW denominator epsilon"}.in(1e-30, 1),
        SchemaEntry{"optim.weight_decay", T::Float, t.optimizer.weight_decay, "", "decoupled weight decay"}.in(0, 10),
        SchemaEntry{"optim.max_grad_norm", T::Float, t.optimizer.max_grad_norm, "", "clip the global gradient norm (0 = off)"}.in(0, 1e12),
        // [run]
        SchemaEntry{"run.steps", T::Int, d.run.steps, "steps", "trainer steps (RL steps, or SFT steps with trainer.kind = \"sft\")"}.in(1, 1e12),
        SchemaEntry{"run.seed", T::Int, static_cast<int64_t>(r.seed), "", "seeds sampling, data order and mini-batches (>= 0)"}.in(0, 9.2e18),
        {"run.out_dir", T::String, d.run.out_dir.string(), "", "metrics, samples, checkpoints and the plot go here"},
        SchemaEntry{"run.checkpoint_every", T::Int, d.run.checkpoint_every, "steps", "checkpoint period (0 = only at the end)"}.in(0, 1e12),
        SchemaEntry{"run.keep_checkpoints", T::Int, d.run.keep_checkpoints, "", "complete checkpoints kept"}.in(0, 1e6),
        {"run.tensorboard", T::Bool, d.run.tensorboard, "",
         "also write every number of metrics.jsonl as TensorBoard scalars (events.out.tfevents.* in run.out_dir; "
         "`tensorboard --logdir runs/` shows them)"},
        SchemaEntry{"run.samples_every", T::Int, d.run.samples_every, "steps",
         "write prompts/completions/rewards to samples.jsonl (0 = never)"}.in(0, 1e12),
        SchemaEntry{"run.samples_per_step", T::Int, d.run.samples_per_step, "samples", "samples written each time"}.in(0, 1e6),
        SchemaEntry{"run.eval_every", T::Int, d.run.eval_every, "steps", "evaluate pass@1 on the eval split (0 = only before and after)"}.in(0, 1e12),
        SchemaEntry{"run.threads", T::Int, d.run.threads, "", "LibTorch CPU threads (0 = all cores)"}.in(0, 1024),
        {"run.eval_kl_model", T::String, d.run.eval_kl_model, "",
         "a model directory with the policy's tokenizer (a distillation teacher): the summary's kl_to_model_before/after "
         "is the held-out per-token KL(policy || it) on the policy's own samples (\"\" = off)"},
        {"run.warm_start_cache", T::String, d.run.warm_start_cache, "",
         "a directory: an SFT warm start with the same [model], [data], [sft] and run.seed is trained once, saved "
         "there and loaded by later runs (\"\" = off; ignored with run.sft_control). rlf compare sets it"},
        SchemaEntry{"run.rollout_token_budget", T::Int, d.run.rollout_token_budget, "tokens",
         "RL: end the run once its steps generated this many tokens (rollouts, refinements, critiques by the "
         "policy; checked after each step); 0 = run.steps decides. rlf compare gives every method the same budget"}.in(0, 1e15),
        SchemaEntry{"run.max_failed_steps", T::Int, d.run.max_failed_steps, "steps",
         "RL: stop the run with an error after this many steps in a row in which every episode ended with an "
         "environment error (env/errors = episode/count); 0 = never stop"}.in(0, 1e12),
        {"run.sft_control", T::Bool, d.run.sft_control, "",
         "after RL (or DPO), train the post-SFT policy with SFT alone for the steps' wall time and report its "
         "pass@1 (pass1_control; needs [sft])"},
        // [sft]
        {"sft.data", T::Any, Json::object(), "",
         "SFT data (docs/data.md, SftDataset): the warm start before RL, or the data of trainer.kind = \"sft\"; "
         "empty = none"},
        SchemaEntry{"sft.steps", T::Int, sft.steps, "steps", "warm start: SFT optimiser steps before RL"}.in(0, 1e12),
        SchemaEntry{"sft.batch_size", T::Int, sft.batch_size, "pairs", "(prompt, response) pairs per SFT step"}.in(1, 1e6),
        SchemaEntry{"sft.micro_batch_size", T::Int, sft.micro_batch_size, "pairs", "pairs per forward/backward"}.in(1, 1e6),
        SchemaEntry{"sft.lr", T::Float, sft.lr, "", "warm start: learning rate (AdamW, constant)"}.in(1e-30, 10),
        SchemaEntry{"sft.stop_at_pass1", T::Float, sft.stop_at_pass1, "",
         "warm start: stop once greedy pass@1 on training prompts reaches this (0 = run all sft.steps)"}.in(0, 1),
        SchemaEntry{"sft.stop_eval_every", T::Int, sft.stop_eval_every, "steps", "SFT steps between those pass@1 checks"}.in(1, 1e12),
        SchemaEntry{"sft.stop_eval_prompts", T::Int, sft.stop_eval_prompts, "prompts",
         "training prompts (the first N; never held-out ones) those checks use"}.in(1, 1e9),
    };
    // [preference]
    const PreferenceOptions& pref = d.preference;
    s.push_back({"preference.data", T::Any, Json::object(), "",
                 "preference pairs (docs/data.md, PreferenceDataset): a file of prompt/chosen/rejected records, "
                 "HH-RLHF records, or the synthetic arithmetic preset; needed by trainer.kind = \"dpo\" and \"rm\""});
    s.push_back({"preference.loss", T::String, std::string(algo::preference_loss_name(pref.loss.loss)), "",
                 "the preference loss (docs/algorithms.md): DPO, IPO, SLiC hinge, SimPO (reference-free), SPPO",
                 {"sigmoid", "ipo", "hinge", "simpo", "sppo"}});
    s.push_back(SchemaEntry{"preference.beta", T::Float, pref.loss.beta, "",
                            "strength of the implicit KL to the reference (DPO 0.1; SimPO's reward scale, 2..10)"}
                    .in(1e-9, 1e6));
    s.push_back(SchemaEntry{"preference.label_smoothing", T::Float, pref.loss.label_smoothing, "",
                            "sigmoid, simpo: assumed share of flipped labels (cDPO), in [0, 0.5)"}
                    .in(0, 0.4999999));
    s.push_back(SchemaEntry{"preference.simpo_gamma", T::Float, pref.loss.simpo_gamma, "",
                            "simpo: target reward margin gamma"}
                    .in(0, 1e6));
    s.push_back({"preference.online", T::Bool, pref.online, "",
                 "trainer.kind = \"grpo\": train with the preference loss instead of the policy gradient, on pairs "
                 "of each rollout group's best and worst episode under the rewards, fresh every step (online DPO)"});
    s.push_back(SchemaEntry{"preference.batch_size", T::Int, pref.batch_size, "pairs",
                            "preference pairs per step (two sequences each)"}
                    .in(1, 1e6));
    // [process]
    s.push_back({"process.data", T::Any, Json::object(), "",
                 "trainer.kind = \"rm\": step-labelled solutions for a process reward model (docs/data.md, "
                 "StepDataset): a file of prompt/steps/labels records, or preset arithmetic (chained sums with a "
                 "wrong step); instead of [preference.data]"});
    s.push_back(SchemaEntry{"process.batch_size", T::Int, d.process.batch_size, "solutions",
                            "step-labelled solutions per step"}
                    .in(1, 1e6));
    s.push_back({"process.labels", T::String, d.process.labels, "",
                 "\"given\": the records' labels; \"monte_carlo\": each training step's label is the share of the "
                 "policy's rollouts from it that the [[reward]] judges right (Math-Shepherd); held-out solutions keep "
                 "their given labels",
                 {"given", "monte_carlo"}});
    s.push_back(SchemaEntry{"process.mc_rollouts", T::Int, d.process.mc_rollouts, "rollouts",
                            "monte_carlo: rollouts per step"}
                    .in(1, 4096));
    s.push_back(SchemaEntry{"process.mc_temperature", T::Float, d.process.mc_temperature, "",
                            "monte_carlo: the rollouts' sampling temperature"}
                    .in(0, 100));
    // [reward_model]
    const RewardModelOptions& rm = d.reward_model;
    s.push_back(SchemaEntry{"reward_model.margin", T::Float, rm.margin, "",
                            "trainer.kind = \"rm\": margin m of the Bradley-Terry loss -log sigmoid(r_c - r_r - m)"}
                    .in(0, 1e6));
    s.push_back({"reward_model.train_backbone", T::Bool, rm.train_backbone, "",
                 "trainer.kind = \"rm\": false trains only the score head on the frozen backbone (a linear probe, "
                 "the cheap variant)"});
    s.push_back({"reward_model.attributes", T::StringList, Json(rm.attributes), "",
                 "trainer.kind = \"rm\": one regression head per attribute, trained on the pairs' ratings "
                 "(chosen_ratings / rejected_ratings) by least squares — a multi-objective reward model (ArmoRM); "
                 "[] = one Bradley-Terry head"});
    s.push_back({"reward_model.gating", T::Bool, rm.gating, "",
                 "with reward_model.attributes: after the heads, fit a gating layer over the prompt's features that "
                 "weighs the attributes per prompt (ArmoRM), by the Bradley-Terry loss on the training pairs; saved as "
                 "gating.safetensors beside the model"});
    s.push_back(SchemaEntry{"reward_model.gating_hidden", T::Int, rm.gating_options.hidden, "units",
                            "the gating network's hidden layer (0 = linear)"}
                    .in(0, 65536));
    s.push_back(SchemaEntry{"reward_model.gating_steps", T::Int, rm.gating_options.steps, "steps",
                            "full-batch Adam steps of the gating fit"}
                    .in(1, 1e7));
    s.push_back(SchemaEntry{"reward_model.gating_lr", T::Float, rm.gating_options.lr, "",
                            "Adam's learning rate for the gating fit"}
                    .in(1e-9, 10));
    s.push_back(SchemaEntry{"reward_model.gating_temperature", T::Float, rm.gating_options.temperature, "",
                            "temperature of the gating softmax"}
                    .in(1e-6, 1e6));
    // [value]
    const ValueOptions& v = d.value;
    s.push_back({"value.model", T::String, v.model, "",
                 "algorithm.credit = \"gae\": the critic's start, a classifier directory (a reward model); \"\" = the "
                 "policy as RL starts with a zero value head"});
    s.push_back(SchemaEntry{"value.lr", T::Float, v.lr, "", "the critic's peak learning rate ([optim]'s schedule)"}.in(1e-12, 10));
    s.push_back(SchemaEntry{"value.clip", T::Float, v.clip, "",
                            "eps of the clipped value loss 1/2 max((V - R)^2, (V_clip - R)^2) (0 = unclipped)"}.in(0, 1e6));
    s.push_back({"value.shared", T::Bool, v.shared, "",
                 "true: the critic is a value head on the policy's own trunk (one model, one optimiser; the value "
                 "term joins the policy's loss with weight value.coef) instead of a separate model"});
    s.push_back(SchemaEntry{"value.coef", T::Float, v.coef, "",
                            "value.shared: the value term's weight in the policy's loss (c_1 of PPO)"}
                    .in(1e-9, 1e6));
    // [dist]
    const DistOptions& ds = d.dist;
    s.push_back(SchemaEntry{"dist.timeout_s", T::Float, ds.timeout_s, "s",
                            "data-parallel runs (torchrun): the rendezvous and every collective wait at most this "
                            "long; a rank that died or hung makes the others fail after it"}
                    .in(0.001, 1e7));
    s.push_back(SchemaEntry{"dist.check_every", T::Int, ds.check_every, "steps",
                            "data-parallel runs: compare a checksum of the parameters across ranks every N steps "
                            "and stop with an error when they differ (0 = never)"}
                    .in(0, 1e12));
    s.push_back({"dist.backend", T::String, ds.backend, "",
                 "data-parallel runs: auto (gloo for CPU ranks, nccl for CUDA ranks, each rank on cuda:LOCAL_RANK), "
                 "gloo or nccl",
                 {"auto", "gloo", "nccl"}});
    // [lora] (docs/lora.md)
    const LoraTrainOptions& lo = d.lora;
    s.push_back({"lora.enabled", T::Bool, lo.enabled, "",
                 "train low-rank adapters on the policy's projections, the base frozen (after any [sft] warm start); "
                 "checkpoints hold the base in model/ and the adapters in adapter/ (PEFT layout)"});
    s.push_back(SchemaEntry{"lora.rank", T::Int, lo.adapter.rank, "", "r: the adapters' rank"}.in(1, 65536));
    s.push_back(SchemaEntry{"lora.alpha", T::Float, lo.adapter.alpha, "",
                            "lora_alpha: the adapter's output is scaled by alpha / rank"}
                    .in(1e-9, 1e9));
    s.push_back(SchemaEntry{"lora.dropout", T::Float, lo.adapter.dropout, "",
                            "dropout on the adapter's input during updates (rollouts never drop)"}
                    .in(0, 0.999));
    s.push_back({"lora.targets", T::StringList, Json(lo.adapter.targets), "",
                 "projections given adapters in every layer: q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj, "
                 "down_proj (Phi-3: qkv_proj, o_proj, gate_up_proj, down_proj)"});
    s.push_back({"lora.rslora", T::Bool, lo.adapter.rslora, "", "scale alpha / sqrt(rank) instead of alpha / rank"});
    s.push_back({"lora.adapter", T::String, lo.init_from, "",
                 "a PEFT adapter directory (rlf's or peft's) to start from; \"\" = fresh adapters (B = 0)"});
    s.push_back({"lora.merge_rollout", T::Bool, lo.merge_rollout, "",
                 "rollouts and other forwards without autograd use W + (alpha/r)·B·A, merged once per update "
                 "(log-probs equal to float rounding)"});
    check_schema(s);
    return s;
  }();
  return schema;
}

void RlStepOptions::validate() const {
  check(prompts_per_step > 0, "rollout.prompts_per_step must be > 0 (got ", prompts_per_step, ")");
  check(group_size > 0, "rollout.group_size must be > 0 (got ", group_size, ")");
  check(max_batch_rows > 0, "rollout.max_batch_rows must be > 0 (got ", max_batch_rows, ")");
  check(dynamic_sampling_max_rounds > 0, "algorithm.dynamic_sampling_max_rounds must be > 0 (got ",
        dynamic_sampling_max_rounds, ")");
  check(std::isfinite(kl_beta) && kl_beta >= 0, "algorithm.kl_beta must be >= 0 (got ", kl_beta, "; 0 = no reference model)");
  sampling.validate("rollout.");
  credit.validate();
  algo::KlControllerOptions{kl_beta, kl_target, kl_horizon}.validate();
  check(kl_target == 0 || kl_in_reward, "algorithm.kl_target adapts the KL-in-reward coefficient: set "
        "algorithm.kl_placement = \"reward\" (or kl_target = 0)");
  refine.validate();
  if (distill.enabled) distill.validate();
  replay.validate();
  lessons.validate();
  raft.validate();
  pool.validate();
  check(pool.reward_disagreement == 0 || !gold_reward.empty(), "curation.reward_disagreement compares the trained "
        "reward with algorithm.gold_reward: name a held-out [[reward]] component there (weight = 0)");
  env.episode.validate();
  const algo::AdvantageEstimator e = credit.advantage.estimator;
  check(group_size >= 2 || e == algo::AdvantageEstimator::ReinforcePP || credit.mode == algo::CreditMode::Gae,
        "rollout.group_size = 1 gives every episode a "
        "group of its own, so algorithm.advantage = \"", algo::advantage_estimator_name(e),
        "\" (a group baseline) makes every advantage 0 and nothing is learned; set rollout.group_size >= 2 or "
        "algorithm.advantage = \"reinforce_pp\"");
  check(credit.mode == algo::CreditMode::Episode || reward_aggregation == RewardAggregation::sum_then_normalize,
        "algorithm.credit = \"", algo::credit_mode_name(credit.mode),
        "\" needs algorithm.reward_aggregation = \"sum_then_normalize\" (per-turn and per-token rewards are added "
        "before any normalisation)");
}

TrainConfig train_config_from_json(const Json& config, const std::string& source) {
  TrainConfig c;
  c.source = source;
  c.raw = validate_config(config, train_config_schema(), source);
  const Json& j = c.raw;
  auto get = [&](const char* section, const char* key) -> const Json& { return j.at(section).at(key); };
  auto fail_at = [&](const auto&... args) { fail(source, ": ", args...); };

  const std::string kind = get("trainer", "kind").get<std::string>();
  c.kind = kind == "sft" ? TrainerKind::Sft : kind == "dpo" ? TrainerKind::Dpo : kind == "rm" ? TrainerKind::Rm : TrainerKind::Grpo;
  c.model.path = get("model", "path").get<std::string>();
  c.model.tokenizer = get("model", "tokenizer").get<std::string>();
  c.model.dtype = get("model", "dtype").get<std::string>();
  c.model.device = get("model", "device").get<std::string>();
  c.model.dtype = resolve_dtype(c.model.dtype, c.model.device);
  c.model.fast_cpu_path = get("model", "fast_cpu_path").get<bool>();
  c.model.pack_weights = get("model", "pack_weights").get<bool>();
  c.model.random_init = get("model", "random_init").get<std::string>();
  if (c.model.path.empty() && c.model.random_init.empty())
    fail_at("missing required key 'model.path' (a Hugging Face directory or a llama2.c .bin; or set model.random_init)");
  if (!c.model.path.empty() && !c.model.random_init.empty())
    fail_at("model.path and model.random_init are both set; keep one (random_init writes its model to run.out_dir/init)");

  // [data] and [[reward]]
  c.has_data = !j.at("data").empty();
  if (c.has_data) c.data = prompt_dataset_options_from_json(j.at("data"), source + " [data]");
  c.rewards = j.at("reward");
  if (!c.rewards.is_array()) fail_at("'reward' must be an array of tables ([[reward]] ...)");
  c.rl.add_special_tokens = c.data.chat_template.empty();

  // [env]
  c.rl.env = env_config_from_json(j.at("env"), source + " [env]");

  // [refine] [critic]
  c.rl.refine.enabled = get("refine", "enabled").get<bool>();
  c.rl.refine.prompt = get("refine", "prompt").get<std::string>();
  c.rl.refine.select = get("refine", "select").get<std::string>();
  c.rl.refine.max_per_group = get("refine", "max_per_group").get<int64_t>();
  c.rl.refine.gamma = get("refine", "gamma").get<double>();
  c.rl.refine.max_critiques = get("refine", "max_critiques").get<int64_t>();
  c.rl.critic = critic_config_from_json(j.at("critic"), source + " [critic]");
  c.rl.distill.enabled = get("distill", "enabled").get<bool>();
  c.rl.distill.coef = get("distill", "coef").get<double>();
  c.rl.distill.estimator = algo::parse_kl_estimator(get("distill", "estimator").get<std::string>());
  c.rl.distill.top_k = get("distill", "top_k").get<int64_t>();
  c.rl.distill.divergence = algo::parse_distill_divergence(get("distill", "divergence").get<std::string>());
  c.rl.distill.beta = get("distill", "beta").get<double>();
  c.rl.distill.teacher = get("distill", "teacher").get<std::string>();
  c.rl.distill.teacher_path = get("distill", "teacher_path").get<std::string>();
  c.rl.distill.context = get("distill", "context").get<std::string>();
  c.rl.distill.failed_only = get("distill", "failed_only").get<bool>();
  c.rl.replay.enabled = get("replay", "enabled").get<bool>();
  c.rl.replay.capacity_per_task = get("replay", "capacity_per_task").get<int64_t>();
  c.rl.replay.max_tasks = get("replay", "max_tasks").get<int64_t>();
  c.rl.replay.inject = get("replay", "inject").get<int64_t>();
  c.rl.lessons.enabled = get("lessons", "enabled").get<bool>();
  c.rl.lessons.k = get("lessons", "k").get<int64_t>();
  c.rl.lessons.capacity = get("lessons", "capacity").get<int64_t>();
  c.rl.lessons.ngram = get("lessons", "ngram").get<int64_t>();
  c.rl.lessons.min_similarity = get("lessons", "min_similarity").get<double>();
  c.rl.lessons.line = get("lessons", "line").get<std::string>();
  c.rl.lessons.max_per_step = get("lessons", "max_per_step").get<int64_t>();
  c.rl.raft.enabled = get("raft", "enabled").get<bool>();
  c.rl.raft.keep = get("raft", "keep").get<std::string>();
  c.rl.raft.min_reward = get("raft", "min_reward").get<double>();
  // [curation]
  c.decontamination.sources = get("curation", "decontaminate");
  c.decontamination.ngram = get("curation", "ngram").get<int64_t>();
  c.decontamination.overlap_threshold = get("curation", "overlap_threshold").get<double>();
  with_context(source, [&] { c.decontamination.validate(); });
  c.rl.pool.difficulty = get("curation", "difficulty_pool").get<bool>();
  c.rl.pool.pass_low = get("curation", "pool_pass_low").get<double>();
  c.rl.pool.pass_high = get("curation", "pool_pass_high").get<double>();
  c.rl.pool.revisit_after = get("curation", "pool_revisit_after").get<int64_t>();
  c.rl.pool.reward_disagreement = get("curation", "reward_disagreement").get<double>();
  c.rl.pool.drop_after = get("curation", "drop_disagreeing_after").get<int64_t>();

  // [rollout] [algorithm]
  RlStepOptions& r = c.rl;
  r.prompts_per_step = get("rollout", "prompts_per_step").get<int64_t>();
  r.group_size = get("rollout", "group_size").get<int64_t>();
  r.sampling.max_new_tokens = get("rollout", "max_new_tokens").get<int64_t>();
  r.sampling.temperature = get("rollout", "temperature").get<double>();
  r.sampling.top_k = get("rollout", "top_k").get<int64_t>();
  r.sampling.top_p = get("rollout", "top_p").get<double>();
  r.sampling.min_p = get("rollout", "min_p").get<double>();
  r.sampling.stop_strings = get("rollout", "stop").get<std::vector<std::string>>();
  r.max_batch_rows = get("rollout", "max_batch_rows").get<int64_t>();
  r.env.episode.max_batch_rows = r.max_batch_rows;
  r.env.episode.add_special_tokens = r.add_special_tokens;
  r.reward_aggregation = parse_aggregation(get("algorithm", "reward_aggregation").get<std::string>());
  r.accuracy_reward = get("algorithm", "accuracy_reward").get<std::string>();
  r.gold_reward = get("algorithm", "gold_reward").get<std::string>();
  r.credit.mode = algo::parse_credit_mode(get("algorithm", "credit").get<std::string>());
  r.credit.gamma = get("algorithm", "gamma").get<double>();
  r.credit.advantage.estimator = algo::parse_advantage_estimator(get("algorithm", "advantage").get<std::string>());
  r.credit.advantage.std_eps = get("algorithm", "std_eps").get<double>();
  r.kl_beta = get("algorithm", "kl_beta").get<double>();
  r.kl_estimator = algo::parse_kl_estimator(get("algorithm", "kl_estimator").get<std::string>());
  r.kl_in_reward = get("algorithm", "kl_placement").get<std::string>() == "reward";
  r.kl_target = get("algorithm", "kl_target").get<double>();
  r.kl_horizon = get("algorithm", "kl_horizon").get<double>();
  r.credit.lambda = get("algorithm", "lambda").get<double>();
  r.credit.whiten = get("algorithm", "whiten_advantages").get<bool>();
  r.credit.turn_values = get("algorithm", "value_level").get<std::string>() == "turn";
  if (r.credit.turn_values && r.credit.mode != algo::CreditMode::Gae)
    fail_at("algorithm.value_level = \"turn\" places the critic's values for GAE: it needs algorithm.credit = \"gae\"");
  c.value.enabled = r.credit.mode == algo::CreditMode::Gae;
  c.value.model = get("value", "model").get<std::string>();
  c.value.lr = get("value", "lr").get<double>();
  c.value.clip = get("value", "clip").get<double>();
  c.value.shared = get("value", "shared").get<bool>();
  c.value.coef = get("value", "coef").get<double>();
  with_context(source, [&] { c.value.validate(); });
  c.dist.timeout_s = get("dist", "timeout_s").get<double>();
  c.dist.check_every = get("dist", "check_every").get<int64_t>();
  c.dist.backend = get("dist", "backend").get<std::string>();
  with_context(source, [&] { c.dist.validate(); });
  c.lora.enabled = get("lora", "enabled").get<bool>();
  c.lora.adapter.rank = get("lora", "rank").get<int64_t>();
  c.lora.adapter.alpha = get("lora", "alpha").get<double>();
  c.lora.adapter.dropout = get("lora", "dropout").get<double>();
  c.lora.adapter.targets = get("lora", "targets").get<std::vector<std::string>>();
  c.lora.adapter.rslora = get("lora", "rslora").get<bool>();
  c.lora.init_from = get("lora", "adapter").get<std::string>();
  c.lora.merge_rollout = get("lora", "merge_rollout").get<bool>();
  if (c.lora.enabled) with_context(source, [&] { c.lora.adapter.validate("lora."); });
  r.dynamic_sampling = get("algorithm", "dynamic_sampling").get<bool>();
  r.max_staleness = get("rollout", "max_staleness").get<int64_t>();
  r.recompute_old_logprobs = get("algorithm", "recompute_old_logprobs").get<bool>();
  r.seed_alpha = get("algorithm", "seed_alpha").get<double>();
  r.dynamic_sampling_max_rounds = get("algorithm", "dynamic_sampling_max_rounds").get<int64_t>();
  const int64_t seed = get("run", "seed").get<int64_t>();
  if (seed < 0) fail_at("run.seed must be >= 0 (got ", seed, ")");
  r.seed = static_cast<uint64_t>(seed);
  if (c.has_data) c.data.seed = r.seed;

  RlLossOptions& l = c.loss;
  l.policy.eps_low = get("algorithm", "eps_low").get<double>();
  l.policy.eps_high = get("algorithm", "eps_high").get<double>();
  l.policy.dual_clip = get("algorithm", "dual_clip").get<double>();
  l.policy.ratio_level = algo::parse_ratio_level(get("algorithm", "ratio_level").get<std::string>());
  l.policy.ratio_cap = get("algorithm", "off_policy_ratio_cap").get<double>();
  l.policy.mask_low = get("algorithm", "off_policy_mask_low").get<double>();
  l.policy.mask_high = get("algorithm", "off_policy_mask_high").get<double>();
  {
    const auto objective = get("algorithm", "policy_loss").get<std::string>();
    l.nft = objective == "nft";
    if (!l.nft) l.policy.objective = algo::parse_policy_objective(objective);
  }
  l.policy.dppo_ratio_cap = get("algorithm", "dppo_ratio_cap").get<double>();
  l.policy.clip_cov_fraction = get("algorithm", "clip_cov_fraction").get<double>();
  l.policy.clip_cov_low = get("algorithm", "clip_cov_low").get<double>();
  l.policy.clip_cov_high = get("algorithm", "clip_cov_high").get<double>();
  l.policy.kl_cov_fraction = get("algorithm", "kl_cov_fraction").get<double>();
  l.policy.kl_cov_coef = get("algorithm", "kl_cov_coef").get<double>();
  l.nft_options.neg_weight = get("algorithm", "nft_neg_weight").get<double>();
  l.nft_options.clamp_negative = get("algorithm", "nft_clamp_negative").get<double>();
  l.correction.tis_cap = get("algorithm", "tis_cap").get<double>();
  l.correction.mask_low = get("algorithm", "mismatch_mask_low").get<double>();
  l.correction.mask_high = get("algorithm", "mismatch_mask_high").get<double>();
  l.aggregation.mode = algo::parse_loss_aggregation(get("algorithm", "loss_aggregation").get<std::string>());
  l.aggregation.max_tokens = r.env.episode.episode_budget(r.sampling.max_new_tokens, r.env.type == "single_turn");
  l.entropy_coef = get("algorithm", "entropy_coef").get<double>();
  l.kl_reference = get("algorithm", "kl_reference").get<std::string>();

  // [optim] and the trainer
  TrainerOptions& t = c.trainer;
  t.epochs = get("algorithm", "epochs").get<int64_t>();
  t.mini_batches = get("algorithm", "mini_batches").get<int64_t>();
  t.micro_batch_size = get("algorithm", "micro_batch_size").get<int64_t>();
  r.reference_micro_batch_size = t.micro_batch_size;
  t.seed = r.seed;
  t.kl_metric_estimator = r.kl_estimator;
  t.optimizer.beta1 = get("optim", "beta1").get<double>();
  t.optimizer.beta2 = get("optim", "beta2").get<double>();
  t.optimizer.eps = get("optim", "eps").get<double>();
  t.optimizer.weight_decay = get("optim", "weight_decay").get<double>();
  t.optimizer.max_grad_norm = get("optim", "max_grad_norm").get<double>();

  // [run]
  RunOptions& run = c.run;
  run.steps = get("run", "steps").get<int64_t>();
  if (run.steps <= 0) fail_at("run.steps must be > 0 (got ", run.steps, ")");
  if (t.epochs > 0 && t.mini_batches > 0 && run.steps > (int64_t{1} << 40) / (t.epochs * t.mini_batches))
    fail_at("run.steps x algorithm.epochs x algorithm.mini_batches = ", run.steps, " x ", t.epochs, " x ",
            t.mini_batches, " is too many optimiser steps (at most 2^40)");
  t.lr.kind = parse_lr_schedule_kind(get("optim", "schedule").get<std::string>());
  t.lr.lr = get("optim", "lr").get<double>();
  t.lr.lr_min = get("optim", "lr_min").get<double>();
  t.lr.warmup_steps = get("optim", "warmup_steps").get<int64_t>();
  t.lr.total_steps = run.steps * std::max<int64_t>(1, t.epochs) * std::max<int64_t>(1, t.mini_batches);
  run.out_dir = get("run", "out_dir").get<std::string>();
  if (run.out_dir.empty()) fail_at("run.out_dir must not be empty (the run writes its metrics and checkpoints there)");
  run.checkpoint_every = get("run", "checkpoint_every").get<int64_t>();
  run.keep_checkpoints = get("run", "keep_checkpoints").get<int64_t>();
  run.samples_every = get("run", "samples_every").get<int64_t>();
  run.tensorboard = get("run", "tensorboard").get<bool>();
  run.samples_per_step = get("run", "samples_per_step").get<int64_t>();
  run.eval_every = get("run", "eval_every").get<int64_t>();
  run.threads = get("run", "threads").get<int64_t>();
  run.sft_control = get("run", "sft_control").get<bool>();
  run.rollout_token_budget = get("run", "rollout_token_budget").get<int64_t>();
  run.warm_start_cache = get("run", "warm_start_cache").get<std::string>();
  run.eval_kl_model = get("run", "eval_kl_model").get<std::string>();
  run.max_failed_steps = get("run", "max_failed_steps").get<int64_t>();
  for (const char* key : {"checkpoint_every", "samples_every", "eval_every", "keep_checkpoints", "samples_per_step", "threads"})
    if (get("run", key).get<int64_t>() < 0) fail_at("run.", key, " must be >= 0 (got ", get("run", key).get<int64_t>(), ")");

  // [sft]
  const Json& sft = j.at("sft");
  if (!sft.at("data").empty()) {
    c.sft.enabled = true;
    c.sft.data = sft_dataset_options_from_json(sft.at("data"), source + " [sft.data]");
    c.sft.steps = sft.at("steps").get<int64_t>();
    c.sft.batch_size = sft.at("batch_size").get<int64_t>();
    c.sft.micro_batch_size = sft.at("micro_batch_size").get<int64_t>();
    c.sft.lr = sft.at("lr").get<double>();
    c.sft.stop_at_pass1 = sft.at("stop_at_pass1").get<double>();
    c.sft.stop_eval_every = sft.at("stop_eval_every").get<int64_t>();
    c.sft.stop_eval_prompts = sft.at("stop_eval_prompts").get<int64_t>();
    if (!c.has_data) c.rl.add_special_tokens = c.sft.data.chat_template.empty();
    if (!(c.sft.stop_at_pass1 >= 0 && c.sft.stop_at_pass1 <= 1))
      fail_at("sft.stop_at_pass1 must be in [0, 1] (got ", c.sft.stop_at_pass1, "; 0 = off)");
    if (c.sft.stop_eval_every <= 0 || c.sft.stop_eval_prompts <= 0)
      fail_at("sft.stop_eval_every and sft.stop_eval_prompts must be > 0");
    if (c.sft.batch_size <= 0 || c.sft.micro_batch_size <= 0)
      fail_at("sft.batch_size and sft.micro_batch_size must be > 0");
  }

  // [preference]
  const Json& pref = j.at("preference");
  c.preference.loss.loss = algo::parse_preference_loss(pref.at("loss").get<std::string>());
  c.preference.loss.beta = pref.at("beta").get<double>();
  c.preference.loss.label_smoothing = pref.at("label_smoothing").get<double>();
  c.preference.loss.simpo_gamma = pref.at("simpo_gamma").get<double>();
  c.preference.batch_size = pref.at("batch_size").get<int64_t>();
  c.preference.online = pref.at("online").get<bool>();
  if (!pref.at("data").empty()) {
    c.preference.enabled = true;
    c.preference.data = preference_dataset_options_from_json(pref.at("data"), source + " [preference.data]");
    c.preference.data.seed = c.rl.seed;  // as [data]: the synthetic problems and the shuffle follow run.seed
    if (!c.has_data && !c.sft.enabled) c.rl.add_special_tokens = c.preference.data.chat_template.empty();
  }
  with_context(source, [&] { c.preference.loss.validate(); });
  // [process]
  c.process.batch_size = j.at("process").at("batch_size").get<int64_t>();
  c.process.labels = j.at("process").at("labels").get<std::string>();
  c.process.mc_rollouts = j.at("process").at("mc_rollouts").get<int64_t>();
  c.process.mc_temperature = j.at("process").at("mc_temperature").get<double>();
  if (!j.at("process").at("data").empty()) {
    c.process.enabled = true;
    c.process.data = step_dataset_options_from_json(j.at("process").at("data"), source + " [process.data]");
    c.process.data.seed = c.rl.seed;
    c.process.data.labels_optional = c.process.labels == "monte_carlo";
    if (!c.has_data && !c.sft.enabled) c.rl.add_special_tokens = c.process.data.chat_template.empty();
  }
  c.reward_model.margin = j.at("reward_model").at("margin").get<double>();
  c.reward_model.train_backbone = j.at("reward_model").at("train_backbone").get<bool>();
  c.reward_model.attributes = j.at("reward_model").at("attributes").get<std::vector<std::string>>();
  c.reward_model.gating = j.at("reward_model").at("gating").get<bool>();
  c.reward_model.gating_options.hidden = j.at("reward_model").at("gating_hidden").get<int64_t>();
  c.reward_model.gating_options.steps = j.at("reward_model").at("gating_steps").get<int64_t>();
  c.reward_model.gating_options.lr = j.at("reward_model").at("gating_lr").get<double>();
  c.reward_model.gating_options.temperature = j.at("reward_model").at("gating_temperature").get<double>();
  c.reward_model.gating_options.seed = c.rl.seed ^ 0x6A7EULL;

  // What each kind needs, and options that do not go together.
  if (c.kind != TrainerKind::Rm && c.process.enabled)
    fail_at("[process.data] is the data of trainer.kind = \"rm\" (a process reward model; got \"",
            trainer_kind_name(c.kind), "\"); set trainer.kind or remove it");
  if (c.kind != TrainerKind::Dpo && c.kind != TrainerKind::Rm && c.preference.enabled)
    fail_at("[preference.data] is the data of trainer.kind = \"dpo\" or \"rm\" (got \"", trainer_kind_name(c.kind),
            "\"); set trainer.kind or remove it");
  if (c.preference.online && c.kind != TrainerKind::Grpo)
    fail_at("preference.online trains on rollout groups: it needs trainer.kind = \"grpo\" (offline pairs: "
            "trainer.kind = \"dpo\" with [preference.data])");
  if (c.rl.raft.enabled && c.kind != TrainerKind::Grpo)
    fail_at("raft.enabled samples and filters rollouts: it needs trainer.kind = \"grpo\"");
  if (c.rl.raft.enabled && c.preference.online)
    fail_at("raft.enabled and preference.online both replace the policy-gradient term; keep one");
  if (c.value.enabled && c.kind != TrainerKind::Grpo)
    fail_at("algorithm.credit = \"gae\" is PPO's credit from a critic over sampled episodes: it needs trainer.kind = "
            "\"grpo\"");
  if (c.value.enabled && (c.preference.online || c.rl.raft.enabled))
    fail_at("algorithm.credit = \"gae\" gives the policy-gradient term its advantages, but ",
            c.preference.online ? "preference.online" : "raft.enabled", " replaces that term; keep one");
  if (!c.value.enabled && config.contains("value"))
    fail_at("[value] configures PPO's critic, used by algorithm.credit = \"gae\" (got \"",
            algo::credit_mode_name(c.rl.credit.mode), "\"); set algorithm.credit = \"gae\" or remove [value]");
  if (c.preference.online && c.rl.group_size < 2)
    fail_at("preference.online pairs each group's best and worst episode: set rollout.group_size >= 2");
  if (c.kind == TrainerKind::Grpo) {
    if (!c.has_data) fail_at("missing required key 'data' (the prompt dataset; docs/data.md)");
    const bool env_rewards = c.rl.env.gives_rewards;
    if (c.rewards.empty() && !env_rewards)
      fail_at("no reward configured: add at least one [[reward]] table (docs/rewards.md), or use an environment that "
              "gives rewards ([env] type = \"guess\" or \"external\")");
    if (c.rl.refine.enabled && c.rl.env.type != "single_turn")
      fail_at("refine.enabled writes refinements as answers to the task's prompt, which needs the single-turn ",
              "environment (env.type = \"", c.rl.env.type, "\"); for multi-turn feedback use an environment that ",
              "appends feedback (docs/feedback.md)");
    if (c.rl.lessons.enabled && c.rl.env.type == "external")
      fail_at("lessons.enabled puts lessons in front of the task's prompt, but an external environment writes its own ",
              "prompts (env.type = \"external\")");
    if (c.sft.enabled && (c.sft.steps <= 0 || !(c.sft.lr > 0)))
      fail_at("[sft] with data needs sft.steps > 0 and sft.lr > 0 (the warm start's length and learning rate)");
  } else if (c.kind == TrainerKind::Dpo) {
    if (!c.preference.enabled)
      fail_at("trainer.kind = \"dpo\" needs [preference.data] (the (prompt, chosen, rejected) pairs to train on)");
    if (c.sft.enabled && (c.sft.steps <= 0 || !(c.sft.lr > 0)))
      fail_at("[sft] with data needs sft.steps > 0 and sft.lr > 0 (the warm start's length and learning rate)");
    if (c.has_data && c.rewards.empty())
      fail_at("[data] in a DPO run measures held-out pass@1 and needs a [[reward]] to judge it; add one or drop [data]");
    if (c.rl.kl_beta > 0)
      fail_at("algorithm.kl_beta adds a KL term, but the DPO family's KL to the reference is implicit: set its ",
              "strength with preference.beta and algorithm.kl_beta = 0");
    if (c.loss.entropy_coef != 0) fail_at("algorithm.entropy_coef applies to sampled tokens (grpo, sft); a DPO run has none");
    for (const char* key : {"replay", "lessons", "distill", "refine"})
      if (get(key, "enabled").get<bool>()) fail_at(key, ".enabled is part of RL (trainer.kind = \"grpo\")");
    if (c.trainer.micro_batch_size < 2)
      fail_at("algorithm.micro_batch_size must be >= 2 with trainer.kind = \"dpo\" (a pair's two sequences share "
              "a micro-batch)");
  } else if (c.kind == TrainerKind::Rm) {
    if (c.preference.enabled == c.process.enabled)
      fail_at("trainer.kind = \"rm\" needs ", c.process.enabled ? "one of " : "",
              "[preference.data] (the (prompt, chosen, rejected) pairs of an outcome reward model) or [process.data] "
              "(the step-labelled solutions of a process reward model)", c.process.enabled ? ", not both" : "");
    if (c.process.enabled && c.process.labels == "monte_carlo" && c.rewards.empty())
      fail_at("process.labels = \"monte_carlo\" judges the policy's rollouts with the run's [[reward]] (its accuracy "
              "component, e.g. type = \"math\"); add one");
    if (c.process.enabled && (!c.reward_model.attributes.empty() || c.reward_model.margin > 0))
      fail_at("reward_model.attributes and reward_model.margin apply to [preference.data]; a process reward model "
              "has one head trained on step labels");
    if (c.sft.enabled && (c.sft.steps <= 0 || !(c.sft.lr > 0)))
      fail_at("[sft] with data needs sft.steps > 0 and sft.lr > 0 (the warm start's length and learning rate)");
    if (c.has_data && (!c.sft.enabled || c.rewards.empty()))
      fail_at("[data] in a reward-model run only serves the [sft] warm start's early stop (sft.stop_at_pass1, with a "
              "[[reward]] to judge it); a reward model does not generate: drop [data] (the held-out pairs of "
              "[preference.data], preference.data.eval_size, measure it)");
    if (c.rl.kl_beta > 0) fail_at("algorithm.kl_beta needs token log-probs; a reward model has none: set it to 0");
    if (c.loss.entropy_coef != 0) fail_at("algorithm.entropy_coef needs token log-probs; a reward model has none");
    for (const char* key : {"replay", "lessons", "distill", "refine"})
      if (get(key, "enabled").get<bool>()) fail_at(key, ".enabled is part of RL (trainer.kind = \"grpo\")");
    if (c.trainer.micro_batch_size < 2)
      fail_at("algorithm.micro_batch_size must be >= 2 with trainer.kind = \"rm\" (a pair's two sequences share "
              "a micro-batch)");
    std::set<std::string> seen;
    for (const std::string& a : c.reward_model.attributes)
      if (a.empty() || !seen.insert(a).second)
        fail_at("reward_model.attributes has ", a.empty() ? "an empty name" : "'" + a + "' twice",
                "; name each rated attribute once");
    if (c.reward_model.gating && c.reward_model.attributes.empty())
      fail_at("reward_model.gating weighs the heads of reward_model.attributes; list the attributes or set gating = "
              "false");
    if (!c.reward_model.attributes.empty() && c.reward_model.margin > 0)
      fail_at("reward_model.margin is the Bradley-Terry head's; with reward_model.attributes the heads regress "
              "ratings: drop the margin");
  } else {
    if (!c.sft.enabled) fail_at("trainer.kind = \"sft\" needs [sft.data] (the (prompt, response) pairs to train on)");
    for (const char* key : {"steps", "lr", "stop_at_pass1", "stop_eval_every", "stop_eval_prompts"})
      if (config.contains("sft") && config.at("sft").is_object() && config.at("sft").contains(key))
        fail_at("sft.", key, " configures the warm start before RL; with trainer.kind = \"sft\" the run itself is the SFT: ",
                "use run.steps and [optim] (lr, schedule) instead");
    if (c.has_data && c.rewards.empty())
      fail_at("[data] in an SFT run measures held-out pass@1 and needs a [[reward]] to judge it; add one or drop [data]");
    if (c.rl.replay.enabled) fail_at("replay.enabled is part of RL (trainer.kind = \"grpo\")");
    if (c.rl.lessons.enabled) fail_at("lessons.enabled is part of RL (trainer.kind = \"grpo\"): lessons come from failed rollouts");
    if (c.rl.distill.enabled) fail_at("distill.enabled is part of RL (trainer.kind = \"grpo\"): the student learns on its own samples");
    if (c.rl.refine.enabled) fail_at("refine.enabled is part of RL (trainer.kind = \"grpo\"); an SFT run has no critiques");
    if (c.rl.kl_beta > 0 && c.rl.kl_in_reward)
      fail_at("algorithm.kl_placement = \"reward\" puts the KL into RL rewards; an SFT run has none: use \"loss\"");
  }
  if (c.rl.pool.enabled() && c.kind != TrainerKind::Grpo)
    fail_at("curation.difficulty_pool and curation.reward_disagreement decide which prompts RL samples: they need "
            "trainer.kind = \"grpo\"");
  if (c.decontamination.enabled() && !c.has_data && !c.sft.enabled)
    fail_at("curation.decontaminate drops [data] training prompts and [sft.data] pairs: add one or set "
            "curation.decontaminate = []");
  if (c.run.sft_control && (c.kind == TrainerKind::Sft || c.kind == TrainerKind::Rm || !c.sft.enabled))
    fail_at("run.sft_control compares RL (or DPO) with more SFT: it needs trainer.kind = \"grpo\" or \"dpo\" and an "
            "[sft] warm start");
  with_context(source, [&] {
    c.rl.validate();
    c.trainer.validate();
    c.loss.policy.validate();
    c.loss.correction.validate();
    c.loss.nft_options.validate();
    if (c.loss.correction.active() && !c.rl.recompute_old_logprobs)
      fail("algorithm.tis_cap / mismatch_mask_low / mismatch_mask_high correct the rollout's log-probs towards the "
           "trainer's recomputation: set algorithm.recompute_old_logprobs = true");
    if (c.loss.nft && (c.rl.raft.enabled || c.preference.online))
      fail("algorithm.policy_loss = \"nft\" replaces the policy term; raft.enabled and online preference training "
           "replace it too: choose one");
    if (c.rl.max_staleness > 0) {
      const char* why = c.kind != TrainerKind::Grpo ? "trainer.kind must be \"grpo\" (rollouts are RL's)"
                        : c.value.enabled           ? "[value] trains a critic that the rollouts also read"
                        : c.rl.refine.enabled       ? "refine.enabled: critiques and refinements read the live policy"
                        : c.rl.lessons.enabled      ? "lessons.enabled: lesson critiques read the live policy"
                        : c.rl.distill.enabled      ? "distill.enabled: the teacher reads the live policy"
                                                    : nullptr;
      if (why) fail("rollout.max_staleness = ", c.rl.max_staleness, " (asynchronous rollouts) is not supported here: ", why,
                    "; set rollout.max_staleness = 0");
    }
    // Critiques need a critic: the [critic] section, given (its type defaults to simple_gt once given).
    const bool critiques = c.kind == TrainerKind::Grpo && (c.rl.refine.enabled || c.rl.lessons.enabled);
    if (critiques && !config.contains("critic"))
      fail(c.rl.refine.enabled ? "refine.enabled" : "lessons.enabled", " = true needs a [critic] section: who writes "
           "the critiques (type = \"simple_gt\", \"simple\", \"text\", \"template\", \"self\", \"model\" or "
           "\"endpoint\"; docs/feedback.md)");
    if (c.lora.enabled) {
      const char* why = c.kind == TrainerKind::Rm && !c.reward_model.train_backbone
                            ? "reward_model.train_backbone = false trains the score head alone (a linear probe); "
                              "LoRA trains adapters on the backbone beside the head: choose one"
                        : c.value.enabled && c.value.shared
                            ? "value.shared puts the critic's head on the policy's trunk; use a separate critic "
                              "(value.shared = false)"
                        : c.rl.max_staleness > 0 ? "rollout.max_staleness > 0 samples with a copy of the policy"
                        : c.loss.kl_reference == "initial" && c.sft.enabled && c.kind != TrainerKind::Sft
                            ? "the KL reference is the base with the adapters off (after the warm start); "
                              "algorithm.kl_reference = \"initial\" would need a second copy of the weights"
                                                 : nullptr;
      if (why) fail("lora.enabled: ", why);
    }
    if (c.rl.seed_alpha > 0 && c.rl.credit.mode == algo::CreditMode::Gae)
      fail("algorithm.seed_alpha scales group advantages; algorithm.credit = \"gae\" has no groups (its critic is the "
           "baseline): use episode, turn or token credit");
    c.loss.aggregation.validate();
    c.value.validate();
    check(std::isfinite(c.loss.entropy_coef), "algorithm.entropy_coef must be finite");
  });
  return c;
}

TrainConfig load_train_config(const std::filesystem::path& path, const std::vector<std::string>& overrides) {
  Json cfg = read_toml_file(path);
  apply_overrides(cfg, overrides, /*allow_new_keys=*/true);
  return train_config_from_json(cfg, path.string());
}

}  // namespace rlf

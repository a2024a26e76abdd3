#include "train/train_config.h"

#include "train/sampling_replay.h"

#include "config/config_binding.h"
#include "config/toml_config.h"
#include "model/cpu_features.h"
#include "util/error.h"
#include "util/seed.h"

namespace rlf {

namespace {

const EnumNames<TrainerKind>& trainer_kind_names() {
  static const EnumNames<TrainerKind> names{
      "trainer.kind",
      {{TrainerKind::Rl, "grpo"}, {TrainerKind::Sft, "sft"}, {TrainerKind::Dpo, "dpo"}, {TrainerKind::Rm, "rm"}}};
  return names;
}

// The policy objectives' names, and nft (a term of its own that replaces the policy term).
std::vector<std::string> policy_loss_names() {
  std::vector<std::string> out = algo::policy_objective_names();
  out.push_back("nft");
  return out;
}

// Every key of a run config, bound to the member it sets, in the order of
// docs/config.md; each default is the member's in a default-constructed
// TrainConfig (the option structs in train_config.h).
const ConfigBindings<TrainConfig>& train_config_bindings() {
  static const ConfigBindings<TrainConfig> bindings = {
      // [trainer]
      choice("trainer.kind", "",
             "what the run trains: grpo = RL through the environment with rewards; sft = supervised on [sft.data] "
             "alone; dpo = offline preference optimisation on [preference.data] (the DPO family, [preference]); rm = a "
             "reward model trained on [preference.data] ([reward_model]), or a process reward model on [process.data]",
             RLF_MEMBER(kind), trainer_kind_names()),
      choice("trainer.logprob_recompute", "",
             "token log-probs in vocabulary chunks whose logits are recomputed in backward: never a [batch, tokens, "
             "vocabulary] tensor, one more classifier matmul per chunk; auto = on for a micro-batch of at least 2^27 "
             "logits (tokens x vocabulary); off = keep the logits (faster where they fit)",
             RLF_MEMBER(memory.logprob_recompute), lever_mode_names()),
      field("trainer.logprob_chunk_rows", "rows",
            "positions per chunk of recomputed log-probs (0 = about 2^25 logits per chunk)",
            RLF_MEMBER(memory.logprob_chunk_rows))
          .in(0, 1e9),
      choice("trainer.checkpoint_activations", "",
             "keep only each segment of layers' input in the update and run its forward again in backward (same "
             "gradients bit for bit, about a third more compute); auto = layers when one micro-batch's kept "
             "activations would reach a quarter of the memory the run may use (model/memory_levers.h's estimate); "
             "none = keep everything (fastest where it fits)",
             RLF_MEMBER(memory.checkpoint), checkpoint_mode_names()),
      field("trainer.checkpoint_every", "layers", "decoder layers per checkpointed segment",
            RLF_MEMBER(memory.checkpoint_every))
          .in(1, 1e6),
      choice("trainer.padding_free", "",
             "run the update's layers and log-probs over a micro-batch's real tokens only, its sequences concatenated "
             "(attention per sequence), instead of a [sequences x longest] grid; the same values to float rounding; "
             "auto = on for a micro-batch whose padding is at least an eighth of its grid; off = the padded grid "
             "(today's numbers bit for bit)",
             RLF_MEMBER(memory.padding_free), padding_free_mode_names()),
      choice("trainer.sampling_replay", "",
             "sampling-mask replay: under top-k/top-p/min-p rollouts, record each token's kept set and renormalise "
             "the old and the trainer's log-probs over it, so both measure the distribution sampled; auto = on where "
             "rollout.top_k (1..1024) bounds the kept sets and the temperature is above 0; off = the whole "
             "vocabulary (rollout/sampler_kl then shows the gap)",
             RLF_MEMBER(rl.sampling_replay), sampling_replay_mode_names()),
      field("trainer.balance_ranks", "",
            "data-parallel runs: the ranks exchange a step's episodes once and split each mini-batch's groups by "
            "tokens, so no rank waits on a neighbour that drew the long completions (the same gradient to float "
            "rounding); false = each rank trains the groups it rolled out",
            RLF_MEMBER(trainer.balance_ranks)),
      field("trainer.micro_batch_tokens", "tokens",
            "token budget per micro-batch: sequences (sorted by length) join one while their tokens fit, however "
            "many (one longer than the budget is a micro-batch on its own); 0 = algorithm.micro_batch_size "
            "sequences per micro-batch",
            RLF_MEMBER(trainer.micro_batch_tokens))
          .in(0, 1e9),
      // [model]
      field("model.path", "",
            "policy to train: a Hugging Face directory or a llama2.c .bin (required unless model.random_init)",
            RLF_MEMBER(model.path)),
      field("model.tokenizer", "", "tokenizer.json, a directory with one, or tok*.bin (\"\" = the model's)",
            RLF_MEMBER(model.tokenizer)),
      field("model.dtype", "",
            "compute dtype; bf16 keeps fp32 master weights in the optimizer; auto = bf16 where it is native (a GPU, "
            "AMX or AVX512_BF16), else fp32. The default stays fp32: rollout and trainer log-probs then agree to 2e-5",
            RLF_MEMBER(model.dtype), {"fp32", "bf16", "auto"}),
      field("model.device", "", "cpu, cuda or cuda:N", RLF_MEMBER(model.device)),
      field("model.fast_cpu_path", "",
            "fp32 on CPU: fused kernels for RMSNorm, RoPE + attention and SwiGLU in rollouts and updates "
            "(docs/DESIGN.md); false = LibTorch module path",
            RLF_MEMBER(model.fast_cpu_path)),
      field("model.pack_weights", "",
            "fp32 on CPU: rollouts multiply by a copy of the policy's weights packed into column panels, made at each "
            "rollout's start and freed at its end (faster decoding, the weights' size again in memory meanwhile); "
            "false = no copy",
            RLF_MEMBER(model.pack_weights)),
      field("model.random_init", "",
            "\"\" = load model.path; \"demo\" = a fresh random 0.6M-parameter Llama with a character tokenizer, seeded "
            "by run.seed, written to run.out_dir/init",
            RLF_MEMBER(model.random_init), {"", "demo"}),
      field("model.random_init_context", "tokens",
            "random_init: the fresh model's context (max_position_embeddings; its weights do not depend on it)",
            RLF_MEMBER(model.random_init_context))
          .in(16, 65536),
      section("data", Json::object(), "prompt dataset (docs/data.md): path, preset, fields, templates, split",
              [](TrainConfig& c, const Json& v, const std::string& source) {
                c.has_data = !v.empty();
                if (c.has_data) c.data = prompt_dataset_options_from_json(v, source + " [data]");
              }),
      field("reward", "", "array of reward tables (docs/rewards.md): type, name, weight, options", RLF_MEMBER(rewards)),
      section("env", Json::object(),
              "environment (docs/environments.md): type (single_turn, calculator, guess, try_again, reflect_retry, "
              "external, agent), max_turns, ...",
              [](TrainConfig& c, const Json& v, const std::string& source) {
                c.rl.env = env_config_from_json(v, source + " [env]");
              }),
      // [rollout]
      field("rollout.prompts_per_step", "prompts", "groups per step", RLF_MEMBER(rl.prompts_per_step)).in(1, 1e6),
      field("rollout.train_prompts", "prompts",
            "RL draws its prompts from the first N training prompts, reshuffled every epoch (0 = all of them): "
            "tasks come back within a run, as experience replay needs; the SFT warm start is unchanged",
            RLF_MEMBER(rl.train_prompts))
          .in(0, 1e12),
      field("rollout.group_size", "episodes", "episodes sampled per prompt (G)", RLF_MEMBER(rl.group_size))
          .in(1, 65536),
      field("rollout.max_new_tokens", "tokens", "length limit of each policy turn",
            RLF_MEMBER(rl.sampling.max_new_tokens))
          .in(1, 1e7),
      field("rollout.temperature", "", "sampling temperature (0 = greedy)", RLF_MEMBER(rl.sampling.temperature))
          .in(0, 100),
      field("rollout.top_k", "tokens", "top-k filter (0 = off)", RLF_MEMBER(rl.sampling.top_k)).in(0, 1e9),
      field("rollout.top_p", "", "nucleus filter (1 = off)", RLF_MEMBER(rl.sampling.top_p)).in(1e-9, 1),
      field("rollout.min_p", "", "min-p filter (0 = off)", RLF_MEMBER(rl.sampling.min_p)).in(0, 0.999999),
      field("rollout.stop", "", "stop strings ending a turn (excluded from its text; the environment may add its own)",
            RLF_MEMBER(rl.sampling.stop_strings)),
      field("rollout.max_batch_rows", "sequences", "sequences decoded together", RLF_MEMBER(rl.max_batch_rows))
          .in(1, 65536),
      field("rollout.max_staleness", "steps",
            "asynchronous rollouts: the rollouts of the next steps overlap this step's update, sampled with weights at "
            "most this many steps old (docs/training.md; 0 = synchronous)",
            RLF_MEMBER(rl.max_staleness))
          .in(0, 64),
      // [algorithm]
      choice("algorithm.advantage", "", "advantage estimator (docs/algorithms.md)",
             RLF_MEMBER(rl.credit.advantage.estimator), algo::advantage_estimator_name, algo::parse_advantage_estimator,
             algo::advantage_estimator_names()),
      field("algorithm.std_eps", "", "added to a standard deviation before dividing",
            RLF_MEMBER(rl.credit.advantage.std_eps))
          .in(0, 1),
      choice("algorithm.credit", "",
             "how rewards reach tokens: one return per episode, per-turn returns, per-token returns, or PPO's GAE with "
             "a critic ([value]) (docs/algorithms.md)",
             RLF_MEMBER(rl.credit.mode), algo::credit_mode_name, algo::parse_credit_mode,
             algo::credit_mode_names()),
      field("algorithm.gamma", "", "discount per turn (credit = turn) or per token (token, gae)",
            RLF_MEMBER(rl.credit.gamma))
          .in(1e-9, 1),
      field("algorithm.lambda", "", "credit = gae: GAE's lambda (1 = Monte-Carlo returns, 0 = one-step TD)",
            RLF_MEMBER(rl.credit.lambda))
          .in(0, 1),
      two_way("algorithm.value_level", "",
              "credit = gae: one critic value per policy token, or per turn (at its first token; multi-turn episodes)",
              RLF_MEMBER(rl.credit.turn_values), "token", "turn"),
      field("algorithm.whiten_advantages", "",
            "whiten the advantages over the step's policy tokens (PPO's advantage whitening)",
            RLF_MEMBER(rl.credit.whiten)),
      choice("algorithm.reward_aggregation", "", "how reward components combine (TRL)",
             RLF_MEMBER(rl.reward_aggregation), aggregation_name, parse_aggregation,
             aggregation_names()),
      field("algorithm.accuracy_reward", "", "reward component whose score > 0.5 counts as correct (\"\" = the first)",
            RLF_MEMBER(rl.accuracy_reward)),
      field("algorithm.gold_reward", "",
            "a held-out reward component (weight 0: it never trains) logged as diag/gold_reward; a warning when the "
            "trained reward rises while it falls over 20 steps (\"\" = off)",
            RLF_MEMBER(rl.gold_reward)),
      rlf::bind(  // qualified: the std::vector argument would bring std::bind in by ADL
          "algorithm.policy_loss", OptionType::String, "",
          "the policy objective (docs/algorithms.md): PPO/GRPO's clipped surrogate, CISPO, DPPO's trust region (binary "
          "TV or KL), Clip-Cov, KL-Cov, or negative-aware fine-tuning",
          [](const TrainConfig& c) -> Json {
            return c.loss.nft ? "nft" : algo::policy_objective_name(c.loss.policy.objective);
          },
          [](TrainConfig& c, const Json& v, const std::string&) {
            c.loss.nft = v == "nft";  // the nft term replaces the policy term; the objective keeps its default
            if (!c.loss.nft) c.loss.policy.objective = algo::parse_policy_objective(v.get<std::string>());
          },
          policy_loss_names()),
      field("algorithm.eps_low", "",
            "lower clip of the importance ratio (1 - eps_low); cispo: of the IS weight; dppo_*: the trust region's "
            "delta for A <= 0",
            RLF_MEMBER(loss.policy.eps_low))
          .in(0, 0.999999),
      field("algorithm.eps_high", "",
            "upper clip (1 + eps_high); DAPO clip-higher uses 0.28; cispo: of the IS weight; dppo_*: delta for A > 0",
            RLF_MEMBER(loss.policy.eps_high))
          .in(0, 100),
      field("algorithm.dual_clip", "", "dual-clip bound c > 1 for negative advantages (0 = off)",
            RLF_MEMBER(loss.policy.dual_clip))
          .in(0, 1e6),
      choice("algorithm.ratio_level", "", "importance ratio per token (PPO/GRPO) or per sequence (GSPO)",
             RLF_MEMBER(loss.policy.ratio_level), algo::ratio_level_name, algo::parse_ratio_level,
             algo::ratio_level_names()),
      field("algorithm.off_policy_ratio_cap", "",
            "off-policy tokens: truncate the importance ratio at this value (0 = off)",
            RLF_MEMBER(loss.policy.ratio_cap))
          .in(0, 1e6),
      field("algorithm.off_policy_mask_low", "", "off-policy tokens: drop tokens whose ratio is below this (0 = off)",
            RLF_MEMBER(loss.policy.mask_low))
          .in(0, 0.999999),
      field("algorithm.off_policy_mask_high", "", "off-policy tokens: drop tokens whose ratio is above this (0 = off)",
            RLF_MEMBER(loss.policy.mask_high))
          .in(0, 1e6),
      field("algorithm.dppo_ratio_cap", "", "dppo_tv, dppo_kl: truncation of the detached importance weight",
            RLF_MEMBER(loss.policy.dppo_ratio_cap))
          .in(1e-9, 1e9),
      field("algorithm.clip_cov_fraction", "", "clip_cov: share of loss tokens detached (at least one)",
            RLF_MEMBER(loss.policy.clip_cov_fraction))
          .in(1e-12, 1),
      field("algorithm.clip_cov_low", "", "clip_cov: detached tokens have a covariance above this",
            RLF_MEMBER(loss.policy.clip_cov_low))
          .in(-1e12, 1e12),
      field("algorithm.clip_cov_high", "", "clip_cov: ... and below this", RLF_MEMBER(loss.policy.clip_cov_high))
          .in(-1e12, 1e12),
      field("algorithm.kl_cov_fraction", "",
            "kl_cov: share of loss tokens (the largest covariances, at least one) penalised",
            RLF_MEMBER(loss.policy.kl_cov_fraction))
          .in(1e-12, 1),
      field("algorithm.kl_cov_coef", "", "kl_cov: weight of the penalty |log pi - log pi_old|",
            RLF_MEMBER(loss.policy.kl_cov_coef))
          .in(0, 1e6),
      field("algorithm.nft_neg_weight", "",
            "nft: weight of the incorrect samples' loss (0 = fine-tuning on correct samples alone)",
            RLF_MEMBER(loss.nft_options.neg_weight))
          .in(0, 1e6),
      field("algorithm.nft_clamp_negative", "",
            "nft: floor of the implicit negative policy's ratio (value clamped, gradient kept)",
            RLF_MEMBER(loss.nft_options.clamp_negative))
          .in(1e-9, 1e6),
      field("algorithm.recompute_old_logprobs", "",
            "the trainer recomputes the rollout episodes' old log-probs before the update (one more forward); the "
            "rollout's are kept for the rollout correction",
            RLF_MEMBER(rl.recompute_old_logprobs)),
      field("algorithm.tis_cap", "",
            "truncated importance sampling: each rollout token's loss times min(pi_old / pi_rollout, tis_cap) (0 = "
            "off; needs recompute_old_logprobs)",
            RLF_MEMBER(loss.correction.tis_cap))
          .in(0, 1e6),
      field("algorithm.mismatch_mask_low", "",
            "sequences whose geometric-mean pi_old / pi_rollout is below this carry no loss (0 = off; needs "
            "recompute_old_logprobs)",
            RLF_MEMBER(loss.correction.mask_low))
          .in(0, 0.999999),
      field("algorithm.mismatch_mask_high", "", "... or above this (0 = off)", RLF_MEMBER(loss.correction.mask_high))
          .in(0, 1e6),
      field("algorithm.seed_alpha", "",
            "SEED-GRPO: each group's advantages times 1 - alpha * SE / log G, SE the entropy over clusters of "
            "equivalent final answers (0 = off)",
            RLF_MEMBER(rl.seed_alpha))
          .in(0, 1),
      choice("algorithm.loss_aggregation", "", "per-token losses to one number", RLF_MEMBER(loss.aggregation.mode),
             algo::loss_aggregation_name, algo::parse_loss_aggregation,
             algo::loss_aggregation_names()),
      field("algorithm.kl_beta", "", "weight of the KL to the frozen reference (0 = no reference loaded)",
            RLF_MEMBER(rl.kl_beta))
          .in(0, 1e6),
      choice("algorithm.kl_estimator", "", "KL estimator", RLF_MEMBER(rl.kl_estimator), algo::kl_estimator_name,
             algo::parse_kl_estimator, algo::kl_estimator_names()),
      two_way("algorithm.kl_placement", "", "KL term in the loss, or -beta*k per token in the reward",
              RLF_MEMBER(rl.kl_in_reward), "loss", "reward"),
      field("algorithm.kl_target", "nats",
            "kl_placement = \"reward\": adapt kl_beta so each episode's summed KL approaches this (Ziegler et al. "
            "2019; 0 = fixed kl_beta)",
            RLF_MEMBER(rl.kl_target))
          .in(0, 1e6),
      field("algorithm.kl_horizon", "episodes",
            "adaptive KL: episodes over which a full error (20%) moves kl_beta by 20%", RLF_MEMBER(rl.kl_horizon))
          .in(1, 1e12),
      choice("algorithm.kl_reference", "",
             "the KL reference: the policy as RL starts (after the SFT warm start) or the model as loaded",
             RLF_MEMBER(loss.kl_reference), kl_reference_names()),
      field("algorithm.entropy_coef", "", "entropy bonus weight (0 = off)", RLF_MEMBER(loss.entropy_coef))
          .in(-1e6, 1e6),
      field("algorithm.epochs", "", "optimisation passes over each step's episodes", RLF_MEMBER(trainer.epochs))
          .in(1, 1000),
      field("algorithm.mini_batches", "", "optimiser steps per pass", RLF_MEMBER(trainer.mini_batches)).in(1, 1e6),
      field("algorithm.micro_batch_size", "sequences", "sequences per forward/backward (gradient accumulation)",
            RLF_MEMBER(trainer.micro_batch_size))
          .in(1, 1e6),
      field("algorithm.dynamic_sampling", "", "DAPO: drop groups whose rewards are all equal and refill",
            RLF_MEMBER(rl.dynamic_sampling)),
      field("algorithm.dynamic_sampling_max_rounds", "", "rollout rounds per step at most",
            RLF_MEMBER(rl.dynamic_sampling_max_rounds))
          .in(1, 1000),
      // [refine]
      field("refine.enabled", "",
            "critique-guided refinement (Critique-GRPO, docs/feedback.md): failed episodes get critiques, the policy "
            "refines, correct refinements join their group",
            RLF_MEMBER(rl.refine.enabled)),
      field("refine.prompt", "",
            "the refinement prompt; placeholders {prompt} {response} {critique} {reference} {explanation}",
            RLF_MEMBER(rl.refine.prompt)),
      choice("refine.select", "", "which refinements join their group: every correct one, or the best correct one",
             RLF_MEMBER(rl.refine.select), refine_select_names()),
      field("refine.max_per_group", "episodes", "refinements joining one group at most (0 = no limit)",
            RLF_MEMBER(rl.refine.max_per_group))
          .in(0, 1e6),
      choice("refine.objective", "",
             "the loss on a refinement's tokens (no ratio, no clipping): shaped = -A * p/(p + gamma) (Critique-GRPO, "
             "LUFFY); likelihood = -A * log p (maximum likelihood, as ILF): its gradient does not vanish where the "
             "policy alone would almost never write the token",
             RLF_MEMBER(rl.refine.objective), refine_objective_names()),
      field("refine.gamma", "", "policy shaping p/(p + gamma) on refinement tokens (Critique-GRPO, LUFFY: 0.1)",
            RLF_MEMBER(rl.refine.gamma))
          .in(1e-9, 1e6),
      field("refine.max_critiques", "", "failed episodes critiqued per step at most (0 = all)",
            RLF_MEMBER(rl.refine.max_critiques))
          .in(0, 1e9),
      // [span_credit]
      field("span_credit.enabled", "",
            "critique-to-token credit (Text2Grad, CAPO; docs/feedback.md): the critic marks spans of failed responses "
            "and the tokens that wrote them get coef x score on top of their advantage; needs a critic that marks "
            "spans (columns, or self / model / endpoint quoting them as Error: \"...\")",
            RLF_MEMBER(rl.span_credit.enabled)),
      field("span_credit.coef", "", "advantage added per marked token, times its span's score (-1 wrong, +1 good)",
            RLF_MEMBER(rl.span_credit.coef))
          .in(1e-9, 100),
      field("span_credit.episodes", "", "which rollout episodes are critiqued", RLF_MEMBER(rl.span_credit.episodes),
            {"failed", "all"}),
      field("span_credit.max_critiques", "", "episodes critiqued per step at most (0 = all)",
            RLF_MEMBER(rl.span_credit.max_critiques))
          .in(0, 1e9),
      section("critic", Json::object(),
              "who writes critiques (docs/feedback.md): type = simple | simple_gt | text | template | columns | self | "
              "model | "
              "endpoint, and the type's options",
              [](TrainConfig& c, const Json& v, const std::string& source) {
                c.rl.critic = critic_config_from_json(v, source + " [critic]");
              }),
      // [distill]
      field("distill.enabled", "",
            "self-distillation from feedback / on-policy distillation (docs/feedback.md): the loss term distill, coef "
            "* KL(student || teacher) on the student's tokens",
            RLF_MEMBER(rl.distill.enabled)),
      field("distill.coef", "", "weight of the distill term", RLF_MEMBER(rl.distill.coef)).in(1e-12, 1e6),
      choice("distill.estimator", "", "KL estimator on the student's sampled tokens (distill.top_k = 0)",
             RLF_MEMBER(rl.distill.estimator), algo::kl_estimator_name, algo::parse_kl_estimator,
             algo::kl_estimator_names()),
      field("distill.top_k", "",
            "0 = the sampled-token KL estimate; k >= 1 = distill.divergence on the teacher's k most likely tokens at "
            "each position plus a tail bucket for the rest of the mass",
            RLF_MEMBER(rl.distill.top_k))
          .in(0, 1e9),
      choice("distill.divergence", "",
             "with distill.top_k >= 1: reverse_kl = KL(student || teacher), forward_kl = KL(teacher || student), jsd = "
             "the generalised Jensen-Shannon divergence of GKD with distill.beta",
             RLF_MEMBER(rl.distill.divergence), algo::distill_divergence_name, algo::parse_distill_divergence,
             algo::distill_divergence_names()),
      field("distill.beta", "", "divergence = \"jsd\": the teacher's weight in the mixture, in (0, 1) (TRL's GKD beta)",
            RLF_MEMBER(rl.distill.beta))
          .in(0, 1),
      choice("distill.teacher", "",
             "self = the policy with distill.context in front; frozen = the same with the KL reference's weights "
             "(the policy as RL starts: a teacher that does not move with the student); model = the model at "
             "distill.teacher_path; ema = the same with an exponential moving average of the policy's weights "
             "(distill.ema_decay; a teacher that follows the student slowly)",
             RLF_MEMBER(rl.distill.teacher), distill_teacher_names()),
      field("distill.ema_decay", "",
            "teacher = \"ema\": d in theta_ema <- d * theta_ema + (1 - d) * theta after every optimiser step, in "
            "(0, 1) (about 1 / (1 - d) steps of memory)",
            RLF_MEMBER(rl.distill.ema_decay))
          .in(0, 1),
      field("distill.teacher_path", "", "teacher = \"model\": its directory (the policy's tokenizer)",
            RLF_MEMBER(rl.distill.teacher_path)),
      field("distill.context", "",
            "the teacher's prompt; placeholders {prompt} {reference} {explanation} {response} {sibling} {critique} "
            "([critic] on the episode); \"\" = by teacher: self, frozen and ema \"The answer is {reference}.\\n{prompt}\", "
            "model \"{prompt}\"",
            RLF_MEMBER(rl.distill.context)),
      field("distill.failed_only", "", "distill only on episodes the accuracy reward scored wrong",
            RLF_MEMBER(rl.distill.failed_only)),
      choice("distill.guard", "",
             "none = train every token with a teacher; verifier_sign = the verifier gives the direction, the teacher "
             "the size: on an episode the accuracy reward scored correct only tokens the teacher would raise, on one "
             "scored wrong only tokens it would lower (distill/guard_dropped: the share dropped)",
             RLF_MEMBER(rl.distill.guard), distill_guard_names()),
      // [replay]
      field("replay.enabled", "",
            "experience replay (ARPO, docs/feedback.md): correct episodes are stored per task; a group with none gets "
            "stored ones, off-policy",
            RLF_MEMBER(rl.replay.enabled)),
      field("replay.capacity_per_task", "episodes", "successes kept per task (the oldest go first)",
            RLF_MEMBER(rl.replay.capacity_per_task))
          .in(1, 1e6),
      field("replay.max_tasks", "tasks", "tasks kept at most (the one stored longest ago goes first)",
            RLF_MEMBER(rl.replay.max_tasks))
          .in(1, 1e9),
      field("replay.inject", "episodes", "stored successes given to a group with no correct episode",
            RLF_MEMBER(rl.replay.inject))
          .in(1, 1e6),
      // [lessons]
      field("lessons.enabled", "",
            "lessons of similar tasks in rollout prompts (LANPO-style, docs/feedback.md): the critic's critiques of "
            "failed groups go into a pool; each prompt shows the lessons of the most similar tasks",
            RLF_MEMBER(rl.lessons.enabled)),
      field("lessons.k", "lessons", "lessons shown per prompt at most", RLF_MEMBER(rl.lessons.k)).in(1, 100),
      field("lessons.capacity", "lessons", "lessons kept in the pool (the oldest go first)",
            RLF_MEMBER(rl.lessons.capacity))
          .in(1, 1e7),
      field("lessons.ngram", "", "word n-gram order of the prompt similarity", RLF_MEMBER(rl.lessons.ngram)).in(1, 4),
      field("lessons.min_similarity", "", "Jaccard similarity of the prompts below which a lesson is not shown",
            RLF_MEMBER(rl.lessons.min_similarity))
          .in(0, 1),
      field("lessons.line", "", "how each lesson is shown before the prompt ({lesson})", RLF_MEMBER(rl.lessons.line)),
      field("lessons.max_per_step", "groups", "failed groups critiqued for lessons per step at most (0 = all)",
            RLF_MEMBER(rl.lessons.max_per_step))
          .in(0, 1e9),
      // [raft]
      field("raft.enabled", "",
            "rejection-sampling fine-tuning (RAFT / ReST / STaR, docs/algorithms.md): each step keeps the best (or "
            "every good enough) sampled episode and trains the ce term on those alone, instead of the policy gradient",
            RLF_MEMBER(rl.raft.enabled)),
      choice("raft.keep", "", "each group's best qualifying episode, or every qualifying one",
             RLF_MEMBER(rl.raft.keep), raft_keep_names()),
      field("raft.min_reward", "", "an episode qualifies when its reward is at least this",
            RLF_MEMBER(rl.raft.min_reward))
          .in(-1e12, 1e12),
      // [fcp]
      field("fcp.enabled", "",
            "feedback-conditional policy (FCP, docs/feedback.md): every rollout prompt carries fcp.condition; the "
            "critic's feedback on each episode replaces it, and the ce term trains the episode under its own "
            "feedback, instead of the policy gradient",
            RLF_MEMBER(rl.fcp.enabled)),
      field("fcp.condition", "",
            "the feedback rollouts are conditioned on (the critic's words for a right answer); every rollout prompt "
            "must contain it (data.prompt_template)",
            RLF_MEMBER(rl.fcp.condition)),
      field("fcp.negative_weight", "",
            "the ce weight of an episode relabelled with other feedback than fcp.condition (1 = every episode "
            "alike, as published; 0 = only the episodes the condition already describes)",
            RLF_MEMBER(rl.fcp.negative_weight))
          .in(0, 1),
      // [curation]
      field("curation.decontaminate", "",
            "evaluation sets whose items training prompts must not overlap: each \"path\", \"preset:path\" or a table "
            "like [data]; overlapping [data] training prompts and [sft.data] pairs are dropped at load and listed in "
            "run.out_dir/curation/decontamination.json and decontamination_sft.json ([] = off)",
            RLF_MEMBER(decontamination.sources)),
      field("curation.ngram", "words", "decontamination: words per n-gram (lower-cased letter/digit runs)",
            RLF_MEMBER(decontamination.ngram))
          .in(1, 1000),
      field("curation.overlap_threshold", "",
            "decontamination: drop a prompt when more than this share of its n-grams occur in an evaluation item (0 = "
            "any shared n-gram, GPT-3's rule)",
            RLF_MEMBER(decontamination.overlap_threshold))
          .in(0, 0.999999),
      field("curation.difficulty_pool", "",
            "skip prompts whose last measured pass rate (accuracy reward) is <= pool_pass_low or >= pool_pass_high, "
            "and revisit them pool_revisit_after steps later; the pool is checkpointed",
            RLF_MEMBER(rl.pool.difficulty)),
      field("curation.pool_pass_low", "",
            "difficulty pool: a prompt whose pass rate is at most this is parked (0 = never solved)",
            RLF_MEMBER(rl.pool.pass_low))
          .in(0, 1),
      field("curation.pool_pass_high", "",
            "difficulty pool: a prompt whose pass rate is at least this is parked (1 = always solved)",
            RLF_MEMBER(rl.pool.pass_high))
          .in(0, 1),
      field("curation.pool_revisit_after", "steps",
            "difficulty pool: steps a parked prompt is skipped before it can be drawn again",
            RLF_MEMBER(rl.pool.revisit_after))
          .in(1, 1e12),
      field("curation.reward_disagreement", "",
            "unreliable rewards: a prompt's group disagrees when its mean trained reward and its mean "
            "algorithm.gold_reward score differ by more than this; counted per prompt in "
            "run.out_dir/curation/prompt_pool.json (0 = off)",
            RLF_MEMBER(rl.pool.reward_disagreement))
          .in(0, 1e12),
      field("curation.drop_disagreeing_after", "",
            "unreliable rewards: a prompt with this many disagreements is not sampled again (0 = report only)",
            RLF_MEMBER(rl.pool.drop_after))
          .in(0, 1e12),
      // [optim]
      field("optim.lr", "", "peak learning rate", RLF_MEMBER(trainer.lr.lr)).in(1e-30, 10),
      choice("optim.schedule", "", "shape after warm-up", RLF_MEMBER(trainer.lr.kind), lr_schedule_kind_name,
             parse_lr_schedule_kind, lr_schedule_kind_names()),
      field("optim.warmup_steps", "steps", "linear warm-up (optimiser steps)", RLF_MEMBER(trainer.lr.warmup_steps))
          .in(0, 1e12),
      field("optim.lr_min", "", "final learning rate of linear/cosine decay", RLF_MEMBER(trainer.lr.lr_min)).in(0, 10),
      field("optim.beta1", "", "AdamW first-moment decay", RLF_MEMBER(trainer.optimizer.beta1)).in(0, 0.999999),
      field("optim.beta2", "", "AdamW second-moment decay", RLF_MEMBER(trainer.optimizer.beta2)).in(0, 0.999999),
      field("optim.eps", "", "AdamW denominator epsilon", RLF_MEMBER(trainer.optimizer.eps)).in(1e-30, 1),
      field("optim.weight_decay", "", "decoupled weight decay", RLF_MEMBER(trainer.optimizer.weight_decay)).in(0, 10),
      field("optim.max_grad_norm", "", "clip the global gradient norm (0 = off)",
            RLF_MEMBER(trainer.optimizer.max_grad_norm))
          .in(0, 1e12),
      // [run]
      field("run.steps", "steps", "trainer steps (RL steps, or SFT steps with trainer.kind = \"sft\")",
            RLF_MEMBER(run.steps))
          .in(1, 1e12),
      field("run.seed", "", "seeds sampling, data order and mini-batches (>= 0)", RLF_MEMBER(run.seed)).in(0, 9.2e18),
      field("run.out_dir", "", "metrics, samples, checkpoints and the plot go here", RLF_MEMBER(run.out_dir)),
      field("run.checkpoint_every", "steps", "checkpoint period (0 = only at the end)",
            RLF_MEMBER(run.checkpoint_every))
          .in(0, 1e12),
      field("run.keep_checkpoints", "", "complete checkpoints kept", RLF_MEMBER(run.keep_checkpoints)).in(0, 1e6),
      field("run.tensorboard", "",
            "also write every number of metrics.jsonl as TensorBoard scalars (events.out.tfevents.* in run.out_dir; "
            "`tensorboard --logdir runs/` shows them)",
            RLF_MEMBER(run.tensorboard)),
      field("run.samples_every", "steps", "write prompts/completions/rewards to samples.jsonl (0 = never)",
            RLF_MEMBER(run.samples_every))
          .in(0, 1e12),
      field("run.samples_per_step", "samples", "samples written each time", RLF_MEMBER(run.samples_per_step))
          .in(0, 1e6),
      field("run.eval_every", "steps", "evaluate pass@1 on the eval split (0 = only before and after)",
            RLF_MEMBER(run.eval_every))
          .in(0, 1e12),
      field("run.threads", "", "LibTorch CPU threads (0 = all cores)", RLF_MEMBER(run.threads)).in(0, 1024),
      field("run.eval_kl_model", "",
            "a model directory with the policy's tokenizer (a distillation teacher): the summary's "
            "kl_to_model_before/after is the held-out per-token KL(policy || it) on the policy's own samples (\"\" = "
            "off)",
            RLF_MEMBER(run.eval_kl_model)),
      field("run.warm_start_cache", "",
            "a directory: an SFT warm start with the same [model], [data], [sft] and run.seed is trained once, saved "
            "there and loaded by later runs (\"\" = off; a run with run.sft_control trains its own and saves it). rlf "
            "compare sets it",
            RLF_MEMBER(run.warm_start_cache)),
      field("run.rollout_token_budget", "tokens",
            "RL: end the run once its steps generated this many tokens (rollouts, refinements, critiques by the "
            "policy; checked after each step); 0 = run.steps decides. rlf compare gives every method the same budget",
            RLF_MEMBER(run.rollout_token_budget))
          .in(0, 1e15),
      field("run.max_failed_steps", "steps",
            "RL: stop the run with an error after this many steps in a row in which every episode ended with an "
            "environment error (env/errors = episode/count); 0 = never stop",
            RLF_MEMBER(run.max_failed_steps))
          .in(0, 1e12),
      field("run.sft_control", "",
            "after RL (or DPO), train the post-SFT policy with SFT alone for the steps' wall time and report its "
            "pass@1 (pass1_control; needs [sft])",
            RLF_MEMBER(run.sft_control)),
      // [sft]
      section("sft.data", Json::object(),
              "SFT data (docs/data.md, SftDataset): the warm start before RL, or the data of trainer.kind = \"sft\"; "
              "empty = none",
              [](TrainConfig& c, const Json& v, const std::string& source) {
                c.sft.enabled = !v.empty();
                if (c.sft.enabled) c.sft.data = sft_dataset_options_from_json(v, source + " [sft.data]");
              }),
      field("sft.steps", "steps", "warm start: SFT optimiser steps before RL", RLF_MEMBER(sft.steps)).in(0, 1e12),
      field("sft.batch_size", "pairs", "(prompt, response) pairs per SFT step", RLF_MEMBER(sft.batch_size)).in(1, 1e6),
      field("sft.micro_batch_size", "pairs", "pairs per forward/backward", RLF_MEMBER(sft.micro_batch_size)).in(1, 1e6),
      field("sft.lr", "", "warm start: learning rate (AdamW, constant)", RLF_MEMBER(sft.lr)).in(1e-30, 10),
      field("sft.stop_at_pass1", "",
            "warm start: stop once greedy pass@1 on training prompts reaches this (0 = run all sft.steps)",
            RLF_MEMBER(sft.stop_at_pass1))
          .in(0, 1),
      field("sft.stop_eval_every", "steps", "SFT steps between those pass@1 checks", RLF_MEMBER(sft.stop_eval_every))
          .in(1, 1e12),
      field("sft.stop_eval_prompts", "prompts", "training prompts (the first N; never held-out ones) those checks use",
            RLF_MEMBER(sft.stop_eval_prompts))
          .in(1, 1e9),
      // [preference]
      section("preference.data", Json::object(),
              "preference pairs (docs/data.md, PreferenceDataset): a file of prompt/chosen/rejected records, HH-RLHF "
              "records, or the synthetic arithmetic preset; needed by trainer.kind = \"dpo\" and \"rm\"",
              [](TrainConfig& c, const Json& v, const std::string& source) {
                c.preference.enabled = !v.empty();
                if (c.preference.enabled)
                  c.preference.data = preference_dataset_options_from_json(v, source + " [preference.data]");
              }),
      choice("preference.loss", "",
             "the preference loss (docs/algorithms.md): DPO, IPO, SLiC hinge, SimPO (reference-free), SPPO",
             RLF_MEMBER(preference.loss.loss), algo::preference_loss_name, algo::parse_preference_loss,
             algo::preference_loss_names()),
      field("preference.beta", "",
            "strength of the implicit KL to the reference (DPO 0.1; SimPO's reward scale, 2..10)",
            RLF_MEMBER(preference.loss.beta))
          .in(1e-9, 1e6),
      field("preference.label_smoothing", "", "sigmoid, simpo: assumed share of flipped labels (cDPO), in [0, 0.5)",
            RLF_MEMBER(preference.loss.label_smoothing))
          .in(0, 0.4999999),
      field("preference.simpo_gamma", "", "simpo: target reward margin gamma", RLF_MEMBER(preference.loss.simpo_gamma))
          .in(0, 1e6),
      field("preference.online", "",
            "trainer.kind = \"grpo\": train with the preference loss instead of the policy gradient, on pairs of each "
            "rollout group's best and worst episode under the rewards, fresh every step (online DPO)",
            RLF_MEMBER(preference.online)),
      field("preference.batch_size", "pairs", "preference pairs per step (two sequences each)",
            RLF_MEMBER(preference.batch_size))
          .in(1, 1e6),
      // [process]
      section("process.data", Json::object(),
              "trainer.kind = \"rm\": step-labelled solutions for a process reward model (docs/data.md, StepDataset): "
              "a file of prompt/steps/labels records, or preset arithmetic (chained sums with a wrong step); instead "
              "of [preference.data]",
              [](TrainConfig& c, const Json& v, const std::string& source) {
                c.process.enabled = !v.empty();
                if (c.process.enabled) c.process.data = step_dataset_options_from_json(v, source + " [process.data]");
              }),
      field("process.batch_size", "solutions", "step-labelled solutions per step", RLF_MEMBER(process.batch_size))
          .in(1, 1e6),
      choice("process.labels", "",
             "\"given\": the records' labels; \"monte_carlo\": each training step's label is the share of the policy's "
             "rollouts from it that the [[reward]] judges right (Math-Shepherd); held-out solutions keep their given "
             "labels",
             RLF_MEMBER(process.labels), process_labels_names()),
      field("process.mc_rollouts", "rollouts", "monte_carlo: rollouts per step", RLF_MEMBER(process.mc_rollouts))
          .in(1, 4096),
      field("process.mc_temperature", "", "monte_carlo: the rollouts' sampling temperature",
            RLF_MEMBER(process.mc_temperature))
          .in(0, 100),
      // [reward_model]
      field("reward_model.margin", "",
            "trainer.kind = \"rm\": margin m of the Bradley-Terry loss -log sigmoid(r_c - r_r - m)",
            RLF_MEMBER(reward_model.margin))
          .in(0, 1e6),
      field("reward_model.train_backbone", "",
            "trainer.kind = \"rm\": false trains only the score head on the frozen backbone (a linear probe, the cheap "
            "variant)",
            RLF_MEMBER(reward_model.train_backbone)),
      field("reward_model.attributes", "",
            "trainer.kind = \"rm\": one regression head per attribute, trained on the pairs' ratings (chosen_ratings / "
            "rejected_ratings) by least squares — a multi-objective reward model (ArmoRM); [] = one Bradley-Terry head",
            RLF_MEMBER(reward_model.attributes)),
      field("reward_model.gating", "",
            "with reward_model.attributes: after the heads, fit a gating layer over the prompt's features that weighs "
            "the attributes per prompt (ArmoRM), by the Bradley-Terry loss on the training pairs; saved as "
            "gating.safetensors beside the model",
            RLF_MEMBER(reward_model.gating)),
      field("reward_model.gating_hidden", "units", "the gating network's hidden layer (0 = linear)",
            RLF_MEMBER(reward_model.gating_options.hidden))
          .in(0, 65536),
      field("reward_model.gating_steps", "steps", "full-batch Adam steps of the gating fit",
            RLF_MEMBER(reward_model.gating_options.steps))
          .in(1, 1e7),
      field("reward_model.gating_lr", "", "Adam's learning rate for the gating fit",
            RLF_MEMBER(reward_model.gating_options.lr))
          .in(1e-9, 10),
      field("reward_model.gating_temperature", "", "temperature of the gating softmax",
            RLF_MEMBER(reward_model.gating_options.temperature))
          .in(1e-6, 1e6),
      // [value]
      field("value.model", "",
            "algorithm.credit = \"gae\": the critic's start, a classifier directory (a reward model); \"\" = the "
            "policy as RL starts with a zero value head",
            RLF_MEMBER(value.model)),
      field("value.lr", "", "the critic's peak learning rate ([optim]'s schedule)", RLF_MEMBER(value.lr)).in(1e-12, 10),
      field("value.clip", "", "eps of the clipped value loss 1/2 max((V - R)^2, (V_clip - R)^2) (0 = unclipped)",
            RLF_MEMBER(value.clip))
          .in(0, 1e6),
      field("value.shared", "",
            "true: the critic is a value head on the policy's own trunk (one model, one optimiser; the value term "
            "joins the policy's loss with weight value.coef) instead of a separate model",
            RLF_MEMBER(value.shared)),
      field("value.coef", "", "value.shared: the value term's weight in the policy's loss (c_1 of PPO)",
            RLF_MEMBER(value.coef))
          .in(1e-9, 1e6),
      // [dist]
      field("dist.timeout_s", "s",
            "data-parallel runs (torchrun): the rendezvous and every collective wait at most this long; a rank that "
            "died or hung makes the others fail after it",
            RLF_MEMBER(dist.timeout_s))
          .in(0.001, 1e7),
      field("dist.check_every", "steps",
            "data-parallel runs: compare a checksum of the parameters across ranks every N steps and stop with an "
            "error when they differ (0 = never)",
            RLF_MEMBER(dist.check_every))
          .in(0, 1e12),
      field("dist.backend", "",
            "data-parallel runs: auto (gloo for CPU ranks, nccl for CUDA ranks, each rank on cuda:LOCAL_RANK), gloo or "
            "nccl",
            RLF_MEMBER(dist.backend), {"auto", "gloo", "nccl"}),
      // [lora]
      field("lora.enabled", "",
            "train low-rank adapters on the policy's projections, the base frozen (after any [sft] warm start); "
            "checkpoints hold the base in model/ and the adapters in adapter/ (PEFT layout)",
            RLF_MEMBER(lora.enabled)),
      field("lora.rank", "", "r: the adapters' rank", RLF_MEMBER(lora.adapter.rank)).in(1, 65536),
      field("lora.alpha", "", "lora_alpha: the adapter's output is scaled by alpha / rank",
            RLF_MEMBER(lora.adapter.alpha))
          .in(1e-9, 1e9),
      field("lora.dropout", "", "dropout on the adapter's input during updates (rollouts never drop)",
            RLF_MEMBER(lora.adapter.dropout))
          .in(0, 0.999),
      field("lora.targets", "",
            "projections given adapters in every layer: q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj, down_proj "
            "(Phi-3: qkv_proj, o_proj, gate_up_proj, down_proj)",
            RLF_MEMBER(lora.adapter.targets)),
      field("lora.rslora", "", "scale alpha / sqrt(rank) instead of alpha / rank", RLF_MEMBER(lora.adapter.rslora)),
      field("lora.adapter", "",
            "a PEFT adapter directory (rlf's or peft's) to start from; \"\" = fresh adapters (B = 0)",
            RLF_MEMBER(lora.init_from)),
      field("lora.merge_rollout", "",
            "rollouts and other forwards without autograd use W + (alpha/r)·B·A, merged once per update (log-probs "
            "equal to float rounding)",
            RLF_MEMBER(lora.merge_rollout)),
  };
  return bindings;
}

}  // namespace

const EnumNames<KlReference>& kl_reference_names() {
  static const EnumNames<KlReference> names{"algorithm.kl_reference",
                                            {{KlReference::RlStart, "rl_start"}, {KlReference::Initial, "initial"}}};
  return names;
}

const EnumNames<ProcessLabels>& process_labels_names() {
  static const EnumNames<ProcessLabels> names{
      "process.labels", {{ProcessLabels::Given, "given"}, {ProcessLabels::MonteCarlo, "monte_carlo"}}};
  return names;
}

const char* trainer_kind_name(TrainerKind kind) { return trainer_kind_names().name(kind).c_str(); }

std::filesystem::path TrainConfig::model_path() const {
  return model.random_init.empty() ? std::filesystem::path(model.path) : run.out_dir / "init";
}

const ConfigSchema& train_config_schema() {
  static const ConfigSchema schema = schema_of(train_config_bindings());
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
  sampling_replay_applies(sampling_replay, sampling);  // "on" where it cannot apply: the error names the keys
  credit.validate();
  algo::KlControllerOptions{.initial_beta = kl_beta, .target = kl_target, .horizon = kl_horizon}.validate();
  check(kl_target == 0 || kl_in_reward, "algorithm.kl_target adapts the KL-in-reward coefficient: set "
        "algorithm.kl_placement = \"reward\" (or kl_target = 0)");
  refine.validate();
  if (span_credit.enabled) span_credit.validate();
  if (distill.enabled) distill.validate();
  replay.validate();
  lessons.validate();
  raft.validate();
  if (fcp.enabled) fcp.validate();
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

namespace {

// Values that follow from several keys, each computed here once.
void derive(TrainConfig& c) {
  RlStepOptions& r = c.rl;
  TrainerOptions& t = c.trainer;
  c.model.dtype = resolve_dtype(c.model.dtype, c.model.device);
  // Prompts get the tokenizer's BOS unless a chat template writes it: the
  // template of [data], else of the first of [sft.data], [preference.data],
  // [process.data] given. Environments follow [data]'s.
  r.add_special_tokens = c.data.chat_template.empty();
  r.env.episode.max_batch_rows = r.max_batch_rows;
  r.env.episode.add_special_tokens = r.add_special_tokens;
  if (c.sft.enabled && !c.has_data) r.add_special_tokens = c.sft.data.chat_template.empty();
  if (c.preference.enabled && !c.has_data && !c.sft.enabled)
    r.add_special_tokens = c.preference.data.chat_template.empty();
  if (c.process.enabled && !c.has_data && !c.sft.enabled) r.add_special_tokens = c.process.data.chat_template.empty();
  // run.seed seeds the RL steps, the data, the trainer and the gating fit.
  r.seed = c.run.seed;
  if (c.has_data) c.data.seed = c.run.seed;
  if (c.preference.enabled) c.preference.data.seed = c.run.seed;  // the synthetic problems and the shuffle
  if (c.process.enabled) c.process.data.seed = c.run.seed;
  t.seed = c.run.seed;
  c.reward_model.gating_options.seed = derive_seed(c.run.seed, SeedStream::GatingFit);
  if (c.process.enabled) c.process.data.labels_optional = c.process.labels == ProcessLabels::MonteCarlo;
  c.value.enabled = r.credit.mode == algo::CreditMode::Gae;
  c.loss.aggregation.max_tokens = r.env.episode.episode_budget(r.sampling.max_new_tokens, r.env.type == "single_turn");
  r.reference_micro_batch_size = t.micro_batch_size;
  t.kl_metric_estimator = r.kl_estimator;
  t.lr.total_steps = c.run.steps * std::max<int64_t>(1, t.epochs) * std::max<int64_t>(1, t.mini_batches);
  // [sft]'s options configure the warm start of sft.data: without it they keep their defaults.
  if (!c.sft.enabled) c.sft = SftOptions{};
}

// Checks of single sections that the schema's types and ranges cannot express.
void check_sections(const TrainConfig& c) {
  const std::string& source = c.source;
  auto fail_at = [&](const auto&... args) { fail(source, ": ", args...); };
  if (c.model.path.empty() && c.model.random_init.empty())
    fail_at("missing required key 'model.path' (a Hugging Face directory or a llama2.c .bin; or set model.random_init)");
  if (!c.model.path.empty() && !c.model.random_init.empty())
    fail_at("model.path and model.random_init are both set; keep one (random_init writes its model to run.out_dir/init)");
  if (!c.rewards.is_array()) fail_at("'reward' must be an array of tables ([[reward]] ...)");
  with_context(source, [&] { c.decontamination.validate(); });
  if (c.rl.credit.turn_values && c.rl.credit.mode != algo::CreditMode::Gae)
    fail_at("algorithm.value_level = \"turn\" places the critic's values for GAE: it needs algorithm.credit = \"gae\"");
  with_context(source, [&] { c.value.validate(); });
  with_context(source, [&] { c.dist.validate(); });
  if (c.lora.enabled) with_context(source, [&] { c.lora.adapter.validate("lora."); });
  const TrainerOptions& t = c.trainer;
  if (t.epochs > 0 && t.mini_batches > 0 && c.run.steps > (int64_t{1} << 40) / (t.epochs * t.mini_batches))
    fail_at("run.steps x algorithm.epochs x algorithm.mini_batches = ", c.run.steps, " x ", t.epochs, " x ",
            t.mini_batches, " is too many optimiser steps (at most 2^40)");
  if (c.run.out_dir.empty()) fail_at("run.out_dir must not be empty (the run writes its metrics and checkpoints there)");
  with_context(source, [&] { c.preference.loss.validate(); });
}

// RL's own sections, enabled in a run of another kind ("dpo", "rm").
void check_no_rl_sections(const TrainConfig& c) {
  const std::pair<const char*, bool> sections[] = {
      {"replay", c.rl.replay.enabled}, {"lessons", c.rl.lessons.enabled},
      {"distill", c.rl.distill.enabled}, {"refine", c.rl.refine.enabled}, {"span_credit", c.rl.span_credit.enabled}};
  for (const auto& [key, enabled] : sections)
    if (enabled) fail(c.source, ": ", key, ".enabled is part of RL (trainer.kind = \"grpo\")");
}

void check_warm_start(const TrainConfig& c) {
  if (c.sft.enabled && (c.sft.steps <= 0 || !(c.sft.lr > 0)))
    fail(c.source, ": [sft] with data needs sft.steps > 0 and sft.lr > 0 (the warm start's length and learning rate)");
}

// What each kind of run needs, and sections that belong to another kind.
void check_kind_sections(const TrainConfig& c, const Json& config) {
  auto fail_at = [&](const auto&... args) { fail(c.source, ": ", args...); };
  if (c.kind != TrainerKind::Rm && c.process.enabled)
    fail_at("[process.data] is the data of trainer.kind = \"rm\" (a process reward model; got \"",
            trainer_kind_name(c.kind), "\"); set trainer.kind or remove it");
  if (c.kind != TrainerKind::Dpo && c.kind != TrainerKind::Rm && c.preference.enabled)
    fail_at("[preference.data] is the data of trainer.kind = \"dpo\" or \"rm\" (got \"", trainer_kind_name(c.kind),
            "\"); set trainer.kind or remove it");
  if (c.preference.online && c.kind != TrainerKind::Rl)
    fail_at("preference.online trains on rollout groups: it needs trainer.kind = \"grpo\" (offline pairs: "
            "trainer.kind = \"dpo\" with [preference.data])");
  if (c.rl.raft.enabled && c.kind != TrainerKind::Rl)
    fail_at("raft.enabled samples and filters rollouts: it needs trainer.kind = \"grpo\"");
  if (c.rl.raft.enabled && c.preference.online)
    fail_at("raft.enabled and preference.online both replace the policy-gradient term; keep one");
  if (c.rl.fcp.enabled && c.kind != TrainerKind::Rl)
    fail_at("fcp.enabled relabels sampled rollouts with their feedback: it needs trainer.kind = \"grpo\"");
  if (c.rl.fcp.enabled && (c.rl.raft.enabled || c.preference.online || c.value.enabled || c.loss.nft))
    fail_at("fcp.enabled trains the ce term instead of the policy gradient, and ",
            c.rl.raft.enabled ? "raft.enabled" : c.preference.online ? "preference.online"
            : c.value.enabled ? "algorithm.credit = \"gae\"" : "algorithm.policy_loss = \"nft\"",
            " replaces or feeds that term too; keep one");
  if (c.value.enabled && c.kind != TrainerKind::Rl)
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
}

void check_rl(const TrainConfig& c) {
  auto fail_at = [&](const auto&... args) { fail(c.source, ": ", args...); };
  if (!c.has_data) fail_at("missing required key 'data' (the prompt dataset; docs/data.md)");
  const bool env_rewards = c.rl.env.gives_rewards;
  if (c.rewards.empty() && !env_rewards)
    fail_at("no reward configured: add at least one [[reward]] table (docs/rewards.md), or use an environment that "
            "gives rewards ([env] type = \"guess\" or \"external\")");
  if (c.rl.refine.enabled && c.rl.env.type != "single_turn")
    fail_at("refine.enabled writes refinements as answers to the task's prompt, which needs the single-turn ",
            "environment (env.type = \"", c.rl.env.type, "\"); for multi-turn feedback use an environment that ",
            "appends feedback (docs/feedback.md)");
  if (c.rl.span_credit.enabled) {
    const std::string& t = c.rl.critic.type;
    if (t != "columns" && t != "self" && t != "model" && t != "endpoint")
      fail_at("span_credit.enabled needs a critic that marks spans: critic.type = \"columns\" (column addition), or ",
              "\"self\", \"model\" or \"endpoint\" with a prompt asking for Error: \"...\" lines (got \"", t, "\")");
  }
  if (c.rl.lessons.enabled && c.rl.env.type == "external")
    fail_at("lessons.enabled puts lessons in front of the task's prompt, but an external environment writes its own ",
            "prompts (env.type = \"external\")");
  check_warm_start(c);
}

void check_dpo(const TrainConfig& c) {
  auto fail_at = [&](const auto&... args) { fail(c.source, ": ", args...); };
  if (!c.preference.enabled)
    fail_at("trainer.kind = \"dpo\" needs [preference.data] (the (prompt, chosen, rejected) pairs to train on)");
  check_warm_start(c);
  if (c.has_data && c.rewards.empty())
    fail_at("[data] in a DPO run measures held-out pass@1 and needs a [[reward]] to judge it; add one or drop [data]");
  if (c.rl.kl_beta > 0)
    fail_at("algorithm.kl_beta adds a KL term, but the DPO family's KL to the reference is implicit: set its ",
            "strength with preference.beta and algorithm.kl_beta = 0");
  if (c.loss.entropy_coef != 0) fail_at("algorithm.entropy_coef applies to sampled tokens (grpo, sft); a DPO run has none");
  check_no_rl_sections(c);
  if (c.trainer.micro_batch_size < 2)
    fail_at("algorithm.micro_batch_size must be >= 2 with trainer.kind = \"dpo\" (a pair's two sequences share "
            "a micro-batch)");
}

void check_rm(const TrainConfig& c) {
  auto fail_at = [&](const auto&... args) { fail(c.source, ": ", args...); };
  if (c.preference.enabled == c.process.enabled)
    fail_at("trainer.kind = \"rm\" needs ", c.process.enabled ? "one of " : "",
            "[preference.data] (the (prompt, chosen, rejected) pairs of an outcome reward model) or [process.data] "
            "(the step-labelled solutions of a process reward model)", c.process.enabled ? ", not both" : "");
  if (c.process.enabled && c.process.labels == ProcessLabels::MonteCarlo && c.rewards.empty())
    fail_at("process.labels = \"monte_carlo\" judges the policy's rollouts with the run's [[reward]] (its accuracy "
            "component, e.g. type = \"math\"); add one");
  if (c.process.enabled && (!c.reward_model.attributes.empty() || c.reward_model.margin > 0))
    fail_at("reward_model.attributes and reward_model.margin apply to [preference.data]; a process reward model "
            "has one head trained on step labels");
  check_warm_start(c);
  if (c.has_data && (!c.sft.enabled || c.rewards.empty()))
    fail_at("[data] in a reward-model run only serves the [sft] warm start's early stop (sft.stop_at_pass1, with a "
            "[[reward]] to judge it); a reward model does not generate: drop [data] (the held-out pairs of "
            "[preference.data], preference.data.eval_size, measure it)");
  if (c.rl.kl_beta > 0) fail_at("algorithm.kl_beta needs token log-probs; a reward model has none: set it to 0");
  if (c.loss.entropy_coef != 0) fail_at("algorithm.entropy_coef needs token log-probs; a reward model has none");
  check_no_rl_sections(c);
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
}

void check_sft(const TrainConfig& c, const Json& config) {
  auto fail_at = [&](const auto&... args) { fail(c.source, ": ", args...); };
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

// Options that do not go together, across sections.
void check_combinations(const TrainConfig& c, const Json& config) {
  const std::string& source = c.source;
  auto fail_at = [&](const auto&... args) { fail(source, ": ", args...); };
  if (c.rl.pool.enabled() && c.kind != TrainerKind::Rl)
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
      const char* why = c.kind != TrainerKind::Rl ? "trainer.kind must be \"grpo\" (rollouts are RL's)"
                        : c.value.enabled           ? "[value] trains a critic that the rollouts also read"
                        : c.rl.refine.enabled       ? "refine.enabled: critiques and refinements read the live policy"
                        : c.rl.lessons.enabled      ? "lessons.enabled: lesson critiques read the live policy"
                        : c.rl.distill.enabled      ? "distill.enabled: the teacher reads the live policy"
                                                    : nullptr;
      if (why) fail("rollout.max_staleness = ", c.rl.max_staleness, " (asynchronous rollouts) is not supported here: ", why,
                    "; set rollout.max_staleness = 0");
    }
    // Critiques need a critic: the [critic] section, given (its type defaults to simple_gt once given).
    if (c.asks_critic() && !config.contains("critic"))
      fail(c.rl.refine.enabled ? "refine.enabled = true"
           : c.rl.lessons.enabled ? "lessons.enabled = true"
           : c.rl.span_credit.enabled ? "span_credit.enabled = true"
                                       : "distill.context with {critique}", " needs a [critic] section: who writes "
           "the critiques (type = \"simple_gt\", \"simple\", \"text\", \"template\", \"columns\", \"self\", "
           "\"model\" or \"endpoint\"; docs/feedback.md)");
    if (c.lora.enabled) {
      const char* why = c.kind == TrainerKind::Rm && !c.reward_model.train_backbone
                            ? "reward_model.train_backbone = false trains the score head alone (a linear probe); "
                              "LoRA trains adapters on the backbone beside the head: choose one"
                        : c.value.enabled && c.value.shared
                            ? "value.shared puts the critic's head on the policy's trunk; use a separate critic "
                              "(value.shared = false)"
                        : c.rl.max_staleness > 0 ? "rollout.max_staleness > 0 samples with a copy of the policy"
                        : c.rl.distill.enabled && c.rl.distill.teacher == DistillTeacherKind::Ema
                            ? "distill.teacher = \"ema\" averages the policy's full weights, which LoRA does not "
                              "train (only its adapters): use teacher = \"frozen\" or \"self\""
                        : c.loss.kl_reference == KlReference::Initial && c.sft.enabled && c.kind != TrainerKind::Sft
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
}

}  // namespace

TrainConfig train_config_from_json(const Json& config, const std::string& source) {
  TrainConfig c;
  c.source = source;
  c.raw = validate_config(config, train_config_schema(), source);
  apply_bindings(train_config_bindings(), c.raw, c, source);
  derive(c);
  check_sections(c);
  check_kind_sections(c, config);
  switch (c.kind) {
    case TrainerKind::Rl: check_rl(c); break;
    case TrainerKind::Dpo: check_dpo(c); break;
    case TrainerKind::Rm: check_rm(c); break;
    case TrainerKind::Sft: check_sft(c, config); break;
  }
  check_combinations(c, config);
  return c;
}

TrainConfig load_train_config(const std::filesystem::path& path, const std::vector<std::string>& overrides) {
  Json cfg = read_toml_file(path);
  apply_overrides(cfg, overrides, /*allow_new_keys=*/true);
  return train_config_from_json(cfg, path.string());
}

}  // namespace rlf

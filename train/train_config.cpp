#include "train/train_config.h"

#include "train/toml_config.h"
#include "util/error.h"

namespace rlf {

const ConfigSchema& train_config_schema() {
  using T = OptionType;
  static const ConfigSchema schema = [] {
    ConfigSchema s = {
        // [model]
        {"model.path", T::String, nullptr, "", "policy to train: a Hugging Face directory or a llama2.c .bin"},
        {"model.tokenizer", T::String, "", "", "tokenizer.json, a directory with one, or tok*.bin (\"\" = the model's)"},
        {"model.dtype", T::String, "fp32", "", "compute dtype; bf16 keeps fp32 master weights in the optimizer",
         {"fp32", "bf16"}},
        {"model.device", T::String, "cpu", "", "cpu, cuda or cuda:N"},
        {"model.fast_cpu_path", T::Bool, true, "",
         "fp32 on CPU: fused kernels for RMSNorm, RoPE + attention and SwiGLU in rollouts and updates (docs/DESIGN.md); "
         "false = LibTorch module path"},
        // [data] and [[reward]] are validated by their own libraries.
        {"data", T::Any, nullptr, "", "prompt dataset (docs/data.md): path, preset, fields, templates, split"},
        {"reward", T::Any, nullptr, "", "array of reward tables (docs/rewards.md): type, name, weight, options"},
        // [rollout]
        {"rollout.prompts_per_step", T::Int, 8, "prompts", "groups per step"},
        {"rollout.group_size", T::Int, 8, "completions", "completions sampled per prompt (G)"},
        {"rollout.max_new_tokens", T::Int, 128, "tokens", "completion length limit"},
        {"rollout.temperature", T::Float, 1.0, "", "sampling temperature (0 = greedy)"},
        {"rollout.top_k", T::Int, 0, "tokens", "top-k filter (0 = off)"},
        {"rollout.top_p", T::Float, 1.0, "", "nucleus filter (1 = off)"},
        {"rollout.min_p", T::Float, 0.0, "", "min-p filter (0 = off)"},
        {"rollout.stop", T::StringList, Json::array(), "", "stop strings (excluded from the completion text)"},
        {"rollout.max_batch_rows", T::Int, 64, "sequences", "sequences decoded together"},
        // [algorithm]
        {"algorithm.advantage", T::String, "grpo", "", "advantage estimator (docs/algorithms.md)",
         {"grpo", "dr_grpo", "batch_std", "rloo", "reinforce_pp", "reinforce_pp_baseline"}},
        {"algorithm.std_eps", T::Float, 1e-4, "", "added to a standard deviation before dividing"},
        {"algorithm.reward_aggregation", T::String, "sum_then_normalize", "", "how reward components combine (TRL)",
         {"sum_then_normalize", "normalize_then_sum"}},
        {"algorithm.accuracy_reward", T::String, "", "", "reward component whose score > 0.5 counts as correct (\"\" = the first)"},
        {"algorithm.eps_low", T::Float, 0.2, "", "lower clip of the importance ratio (1 - eps_low)"},
        {"algorithm.eps_high", T::Float, 0.2, "", "upper clip (1 + eps_high); DAPO clip-higher uses 0.28"},
        {"algorithm.dual_clip", T::Float, 0.0, "", "dual-clip bound c > 1 for negative advantages (0 = off)"},
        {"algorithm.ratio_level", T::String, "token", "", "importance ratio per token (PPO/GRPO) or per sequence (GSPO)",
         {"token", "sequence"}},
        {"algorithm.loss_aggregation", T::String, "token_mean", "", "per-token losses to one number",
         {"token_mean", "seq_mean_token_mean", "seq_mean_token_sum_norm"}},
        {"algorithm.kl_beta", T::Float, 0.0, "", "weight of the KL to the frozen reference (0 = no reference loaded)"},
        {"algorithm.kl_estimator", T::String, "k3", "", "KL estimator", {"k1", "k2", "k3"}},
        {"algorithm.kl_placement", T::String, "loss", "", "KL term in the loss or subtracted from the reward",
         {"loss", "reward"}},
        {"algorithm.entropy_coef", T::Float, 0.0, "", "entropy bonus weight (0 = off)"},
        {"algorithm.epochs", T::Int, 1, "", "optimisation passes over each rollout batch"},
        {"algorithm.mini_batches", T::Int, 1, "", "optimiser steps per pass"},
        {"algorithm.micro_batch_size", T::Int, 8, "sequences", "sequences per forward/backward (gradient accumulation)"},
        {"algorithm.dynamic_sampling", T::Bool, false, "", "DAPO: drop groups whose rewards are all equal and refill"},
        {"algorithm.dynamic_sampling_max_rounds", T::Int, 4, "", "rollout rounds per step at most"},
        // [optim]
        {"optim.lr", T::Float, 1e-5, "", "peak learning rate"},
        {"optim.schedule", T::String, "constant", "", "shape after warm-up", {"constant", "linear", "cosine"}},
        {"optim.warmup_steps", T::Int, 0, "steps", "linear warm-up steps"},
        {"optim.lr_min", T::Float, 0.0, "", "final learning rate of linear/cosine decay"},
        {"optim.beta1", T::Float, 0.9, "", "AdamW first-moment decay"},
        {"optim.beta2", T::Float, 0.999, "", "AdamW second-moment decay"},
        {"optim.eps", T::Float, 1e-8, "", "AdamW denominator epsilon"},
        {"optim.weight_decay", T::Float, 0.0, "", "decoupled weight decay"},
        {"optim.max_grad_norm", T::Float, 1.0, "", "clip the global gradient norm (0 = off)"},
        // [run]
        {"run.steps", T::Int, 100, "steps", "RL steps"},
        {"run.seed", T::Int, 0, "", "seeds sampling, data order and mini-batches"},
        {"run.out_dir", T::String, "runs/rlf", "", "metrics, samples, checkpoints and the plot go here"},
        {"run.checkpoint_every", T::Int, 0, "steps", "checkpoint period (0 = only at the end)"},
        {"run.keep_checkpoints", T::Int, 3, "", "complete checkpoints kept"},
        {"run.samples_every", T::Int, 10, "steps", "write prompts/completions/rewards to samples.jsonl (0 = never)"},
        {"run.samples_per_step", T::Int, 4, "samples", "samples written each time"},
        {"run.eval_every", T::Int, 0, "steps", "evaluate pass@1 on the eval split (0 = only before and after)"},
        {"run.threads", T::Int, 0, "", "LibTorch CPU threads (0 = all cores)"},
        // [sft]
        {"sft.data", T::Any, Json::object(), "", "SFT warm-start data (docs/data.md, SftDataset); empty = no SFT"},
        {"sft.steps", T::Int, 0, "steps", "SFT optimiser steps before RL"},
        {"sft.batch_size", T::Int, 16, "pairs", "(prompt, response) pairs per SFT step"},
        {"sft.micro_batch_size", T::Int, 16, "pairs", "pairs per forward/backward"},
        {"sft.lr", T::Float, 1e-3, "", "SFT learning rate (AdamW, constant)"},
        {"sft.stop_at_pass1", T::Float, 0.0, "",
         "stop SFT early once greedy pass@1 on training prompts reaches this (0 = run all sft.steps)"},
        {"sft.stop_eval_every", T::Int, 25, "steps", "SFT steps between those pass@1 checks"},
        {"sft.stop_eval_prompts", T::Int, 200, "prompts",
         "training prompts (the first N; never held-out ones) those checks use"},
    };
    check_schema(s);
    return s;
  }();
  return schema;
}

TrainConfig train_config_from_json(const Json& config, const std::string& source) {
  TrainConfig c;
  c.source = source;
  c.raw = validate_config(config, train_config_schema(), source);
  const Json& j = c.raw;
  auto get = [&](const char* section, const char* key) -> const Json& { return j.at(section).at(key); };
  c.model_path = get("model", "path").get<std::string>();
  c.tokenizer_path = get("model", "tokenizer").get<std::string>();
  c.dtype = get("model", "dtype").get<std::string>();
  c.device = get("model", "device").get<std::string>();
  c.fast_cpu_path = get("model", "fast_cpu_path").get<bool>();
  c.data = prompt_dataset_options_from_json(j.at("data"), source + " [data]");
  c.rewards = j.at("reward");
  check(c.rewards.is_array() && !c.rewards.empty(), source, ": 'reward' must be an array of tables ([[reward]] ...) with at least one reward");
  c.add_special_tokens = c.data.chat_template.empty();
  c.grpo.add_special_tokens = c.add_special_tokens;

  GrpoOptions& g = c.grpo;
  g.prompts_per_step = get("rollout", "prompts_per_step").get<int64_t>();
  g.group_size = get("rollout", "group_size").get<int64_t>();
  g.sampling.max_new_tokens = get("rollout", "max_new_tokens").get<int64_t>();
  g.sampling.temperature = get("rollout", "temperature").get<double>();
  g.sampling.top_k = get("rollout", "top_k").get<int64_t>();
  g.sampling.top_p = get("rollout", "top_p").get<double>();
  g.sampling.min_p = get("rollout", "min_p").get<double>();
  g.sampling.stop_strings = get("rollout", "stop").get<std::vector<std::string>>();
  g.max_batch_rows = get("rollout", "max_batch_rows").get<int64_t>();
  g.reward_aggregation = parse_aggregation(get("algorithm", "reward_aggregation").get<std::string>());
  g.accuracy_reward = get("algorithm", "accuracy_reward").get<std::string>();
  g.advantage.estimator = algo::parse_advantage_estimator(get("algorithm", "advantage").get<std::string>());
  g.advantage.std_eps = get("algorithm", "std_eps").get<double>();
  g.update.loss.eps_low = get("algorithm", "eps_low").get<double>();
  g.update.loss.eps_high = get("algorithm", "eps_high").get<double>();
  g.update.loss.dual_clip = get("algorithm", "dual_clip").get<double>();
  g.update.loss.ratio_level = algo::parse_ratio_level(get("algorithm", "ratio_level").get<std::string>());
  g.update.aggregation.mode = algo::parse_loss_aggregation(get("algorithm", "loss_aggregation").get<std::string>());
  g.update.aggregation.max_tokens = g.sampling.max_new_tokens;
  g.update.kl_beta = get("algorithm", "kl_beta").get<double>();
  g.update.kl_estimator = algo::parse_kl_estimator(get("algorithm", "kl_estimator").get<std::string>());
  g.kl_placement = get("algorithm", "kl_placement").get<std::string>();
  g.update.entropy_coef = get("algorithm", "entropy_coef").get<double>();
  g.update.micro_batch_size = get("algorithm", "micro_batch_size").get<int64_t>();
  g.epochs = get("algorithm", "epochs").get<int64_t>();
  g.mini_batches = get("algorithm", "mini_batches").get<int64_t>();
  g.dynamic_sampling = get("algorithm", "dynamic_sampling").get<bool>();
  g.dynamic_sampling_max_rounds = get("algorithm", "dynamic_sampling_max_rounds").get<int64_t>();
  g.optimizer.beta1 = get("optim", "beta1").get<double>();
  g.optimizer.beta2 = get("optim", "beta2").get<double>();
  g.optimizer.eps = get("optim", "eps").get<double>();
  g.optimizer.weight_decay = get("optim", "weight_decay").get<double>();
  g.optimizer.max_grad_norm = get("optim", "max_grad_norm").get<double>();
  c.steps = get("run", "steps").get<int64_t>();
  check(c.steps > 0, source, ": run.steps must be > 0 (got ", c.steps, ")");
  g.lr.kind = parse_lr_schedule_kind(get("optim", "schedule").get<std::string>());
  g.lr.lr = get("optim", "lr").get<double>();
  g.lr.lr_min = get("optim", "lr_min").get<double>();
  g.lr.warmup_steps = get("optim", "warmup_steps").get<int64_t>();
  g.lr.total_steps = c.steps * g.epochs * g.mini_batches;
  g.seed = static_cast<uint64_t>(get("run", "seed").get<int64_t>());
  c.data.seed = g.seed;
  c.out_dir = get("run", "out_dir").get<std::string>();
  c.checkpoint_every = get("run", "checkpoint_every").get<int64_t>();
  c.keep_checkpoints = get("run", "keep_checkpoints").get<int64_t>();
  c.samples_every = get("run", "samples_every").get<int64_t>();
  c.samples_per_step = get("run", "samples_per_step").get<int64_t>();
  c.eval_every = get("run", "eval_every").get<int64_t>();
  c.threads = get("run", "threads").get<int64_t>();
  check(c.checkpoint_every >= 0 && c.samples_every >= 0 && c.eval_every >= 0, source,
        ": run.checkpoint_every, run.samples_every and run.eval_every must be >= 0");

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
    check(c.sft.stop_at_pass1 >= 0 && c.sft.stop_at_pass1 <= 1, source, ": sft.stop_at_pass1 must be in [0, 1] (got ",
          c.sft.stop_at_pass1, "; 0 = off)");
    check(c.sft.stop_eval_every > 0 && c.sft.stop_eval_prompts > 0, source,
          ": sft.stop_eval_every and sft.stop_eval_prompts must be > 0");
    check(c.sft.steps > 0 && c.sft.batch_size > 0 && c.sft.micro_batch_size > 0 && c.sft.lr > 0, source,
          ": [sft] with data needs steps, batch_size, micro_batch_size and lr > 0");
  }
  with_context(source, [&] { g.validate(); });
  return c;
}

TrainConfig load_train_config(const std::filesystem::path& path, const std::vector<std::string>& overrides) {
  Json cfg = read_toml_file(path);
  apply_overrides(cfg, overrides, /*allow_new_keys=*/true);
  return train_config_from_json(cfg, path.string());
}

}  // namespace rlf

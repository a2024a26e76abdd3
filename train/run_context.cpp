#include "train/run_context.h"

#include <algorithm>
#include <iostream>

#include "data/decontamination.h"
#include "env/env_registry.h"
#include "feedback/critic_config.h"
#include "util/memory_usage.h"
#include "eval/evaluator.h"
#include "model/loader.h"
#include "model/lora.h"
#include "train/demo.h"
#include "train/fitting_records.h"
#include "train/heldout_kl.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/seed.h"
#include "util/write_target.h"

namespace rlf {

namespace fs = std::filesystem;

void RunContext::say(const std::string& s) const {
  if (!opts.quiet) std::cout << s << std::endl;
}

double RunContext::greedy_pass1(const std::vector<PromptExample>& examples) {
  if (examples.empty() || rewards.empty()) return -1;
  EvalOptions o;
  o.n_samples = 1;
  o.temperature = 0.0;
  o.max_new_tokens = cfg.rl.sampling.max_new_tokens;
  o.stop = cfg.rl.sampling.stop_strings;
  o.accuracy_reward = cfg.rl.accuracy_reward;
  o.add_special_tokens = cfg.rl.add_special_tokens;
  o.max_batch_rows = cfg.rl.max_batch_rows;
  return evaluate(policy, examples, rewards, o, nullptr, EvalEnvironment{env.get(), cfg.rl.env.episode}).pass_at_k.at(1);
}

double RunContext::kl_to_model(const std::vector<PromptExample>& examples) {
  if (cfg.run.eval_kl_model.empty() || examples.empty() || rewards.empty()) return -1;
  LoadOptions lo;
  lo.device = policy.model()->device().str();
  Policy other = with_context("run.eval_kl_model", [&] { return load_policy(cfg.run.eval_kl_model, "", lo); });
  check(other.loaded.config.vocab_size == policy.loaded.config.vocab_size, "run.eval_kl_model: its vocabulary (",
        other.loaded.config.vocab_size, " tokens) differs from the policy's (", policy.loaded.config.vocab_size, ")");
  other.model()->eval();
  HeldoutKlOptions o;
  o.max_new_tokens = cfg.rl.sampling.max_new_tokens;
  o.max_batch_rows = cfg.rl.max_batch_rows;
  o.micro_batch_size = cfg.trainer.micro_batch_size;
  o.add_special_tokens = cfg.rl.add_special_tokens;
  o.accuracy_reward = cfg.rl.accuracy_reward;
  const double kl = heldout_kl(policy, *other.model(), examples, rewards, o);
  say("held-out KL(policy || " + cfg.run.eval_kl_model + "): " + std::to_string(kl));
  return kl;
}

void RunContext::attach_lora() {
  CausalLMImpl& pm = *policy.model();
  if (!cfg.lora.init_from.empty())
    with_context("lora.adapter", [&] { load_lora_adapter(pm, cfg.lora.init_from); });
  else
    add_lora(pm, cfg.lora.adapter, derive_seed(cfg.run.seed, SeedStream::LoraInit));
  set_lora_merged_inference(pm, cfg.lora.merge_rollout);
  int64_t trainable = 0, total = 0;
  for (const auto& p : pm.parameters()) {
    total += p.numel();
    if (p.requires_grad()) trainable += p.numel();
  }
  const LoraOptions& lo = lora_options(pm);
  std::string targets;
  for (const std::string& t : lo.targets) targets += (targets.empty() ? "" : ", ") + t;
  say("lora: rank " + std::to_string(lo.rank) + ", alpha " + Json(lo.alpha).dump() + " on " + targets + " (" +
      (cfg.lora.init_from.empty() ? std::string("fresh adapters") : "from " + cfg.lora.init_from) + "): " +
      std::to_string(trainable) + " trainable parameters of " + std::to_string(total));
}

RunSpec run_spec_of(const TrainConfig& cfg, const ReadEnvironment& read_env) {
  RunSpec spec;
  spec.policy.path = cfg.model_path();
  spec.policy.tokenizer = cfg.model.tokenizer;
  spec.policy.dtype = cfg.model.dtype;
  spec.policy.device = cfg.model.device;
  spec.policy.fast_cpu_path = cfg.model.fast_cpu_path;
  spec.policy.pack_weights = cfg.model.pack_weights;
  spec.data = cfg.data;
  spec.rewards = cfg.rewards;
  spec.env = cfg.rl.env;
  spec.source = cfg.source;
  spec.read_env = read_env;
  return spec;
}

RunSpec reflexion_spec_of(const TrainConfig& cfg, const ReadEnvironment& read_env) {
  RunSpec spec = run_spec_of(cfg, read_env);
  spec.policy.inference = true;
  spec.env = EnvConfig{};
  return spec;
}

RunContext load_run_context(const TrainConfig& cfg, const TrainRunOptions& opts, Reducer& reducer) {
  if (!cfg.model.random_init.empty())
    ensure_demo_policy(cfg.model_path(), cfg.run.seed, cfg.model.random_init_context);
  RunContext r{cfg, opts, reducer, load_run_policy(run_spec_of(cfg).policy), {}, {}, {}, {}, {}, {}, {}};
  r.policy.model()->set_memory_levers(memory_levers_here(cfg.memory));
  r.chat = tokenizer_chat_of(*r.policy.tokenizer);
  return r;
}

void load_rewards_and_env(RunContext& r) {
  const RunSpec spec = run_spec_of(r.cfg, r.opts.read_env);
  RunRewards rr = make_run_rewards(spec.rewards, spec.env, spec.source,
                                   run_reward_factories(spec.read_env, std::make_shared<CausalLM>(r.policy.model())));
  r.rewards = std::move(rr.rewards);
  r.env = std::move(rr.env);
}

namespace {

// Writes a decontamination report to run.out_dir/curation/<name> (the writing rank) and logs its summary.
void write_decontamination_report(const RunContext& r, const DecontaminationResult& dc, const std::string& name) {
  const fs::path path = r.cfg.run.out_dir / "curation" / name;
  if (r.writer()) {
    ensure_directory(path.parent_path());
    write_file_atomic(path, dc.report.dump(2));
  }
  r.say(dc.summary() + "; report: " + path.string());
}

// Prompts that cannot fit the context with the configured turn length are bad
// records: an error naming the record, or (on_bad_record = "skip") dropped and counted.
std::vector<PromptExample> fitting_prompts(const std::vector<PromptExample>& in, RunContext& r) {
  const TrainConfig& cfg = r.cfg;
  const int64_t limit = r.policy.model()->config().max_position_embeddings;
  const int64_t need = cfg.rl.sampling.max_new_tokens;
  return fitting_records(
      in, limit, cfg.data.on_bad_record == "skip", r.n_too_long,
      [&](const PromptExample& ex) {
        return static_cast<int64_t>(r.policy.tokenizer->encode(ex.prompt, cfg.rl.add_special_tokens).size()) + need;
      },
      [&](const PromptExample& ex, int64_t n) {
        return str(ex.where, ": the prompt has ", n - need, " tokens; with rollout.max_new_tokens = ", need,
                   " it does not fit the model's context of ", limit,
                   " tokens (shorten it, lower rollout.max_new_tokens, or set data.on_bad_record = \"skip\")");
      });
}

void load_prompts(RunContext& r, const std::vector<EvalText>& eval_texts) {
  const TrainConfig& cfg = r.cfg;
  r.data = std::make_unique<PromptDataset>(PromptDataset::load(cfg.data, &r.chat));
  check(!r.data->train().empty(), cfg.source, ": the dataset has no training records");
  const bool env_prompts = cfg.rl.env.type != "external";  // an external environment writes its own prompts
  std::vector<PromptExample> train = r.data->train();
  if (cfg.decontamination.enabled()) {
    // Training prompts overlapping an evaluation set are dropped before anything else sees them.
    DecontaminationResult dc = decontaminate(train, eval_texts, cfg.decontamination);
    check(!dc.kept.empty(), cfg.source, ": curation.decontaminate dropped every training prompt (",
          dc.n_checked, "); raise curation.overlap_threshold or curation.ngram, or check the evaluation sets");
    write_decontamination_report(r, dc, "decontamination.json");
    r.n_decontaminated = dc.n_dropped();
    train = std::move(dc.kept);
  }
  r.train = env_prompts ? fitting_prompts(train, r) : train;
  if (cfg.rl.train_prompts > 0 && r.train.size() > static_cast<size_t>(cfg.rl.train_prompts))
    r.train.resize(static_cast<size_t>(cfg.rl.train_prompts));  // rollout.train_prompts: tasks come back every epoch
  r.eval = env_prompts ? fitting_prompts(r.data->eval(), r) : r.data->eval();
  check(!r.train.empty(), cfg.source, ": no training prompt fits the model's context");
  for (const auto* split : {&r.train, &r.eval}) check_records(*split, r.rewards, r.env.get());
  r.say("data: " + r.data->summary() +
        (r.n_too_long ? "; " + std::to_string(r.n_too_long) + " prompts too long for the context skipped" : ""));
}

void load_sft_pairs(RunContext& r, const std::vector<EvalText>& eval_texts) {
  const TrainConfig& cfg = r.cfg;
  SftDatasetOptions data = cfg.sft.data;
  // Feedback targets that show a critique: the run's own critic writes it, so the warm start teaches the policy
  // to read what RL's critiques will say.
  std::unique_ptr<Critic> critic;
  const bool shows_critique = data.feedback_fraction > 0 && data.feedback_text.find("{critique}") != std::string::npos;
  if (shows_critique || !data.feedback_prefix.empty()) {
    critic = make_critic(cfg.rl.critic, r.policy, r.opts.read_env, cfg.source + " [critic]");
    const char* key = shows_critique ? "sft.data.feedback_text" : "sft.data.feedback_prefix";
    data.critique = [&critic, key](const PromptExample& problem, const std::string& response) {
      CritiqueRequest q;
      q.task = &problem, q.prompt = problem.prompt, q.response = response, q.correct = false;
      const Critique c = critic->critique({q})[0];
      check(c.ok, key, ": critic '", critic->name(), "' could not critique ", problem.where, ": ", c.error);
      return c.text;
    };
  }
  SftDataset sft = SftDataset::load(data, &r.chat);
  // Held-out prompts stay held out: SFT pairs whose prompt is an eval prompt are dropped.
  r.sft_examples = without_held_out_prompts(sft.examples(), r.eval);
  if (cfg.decontamination.enabled()) {
    // SFT pairs whose prompt overlaps an evaluation set are dropped as RL prompts are.
    std::vector<PromptExample> prompts;
    for (const SftExample& e : r.sft_examples) {
      PromptExample p;
      p.id = e.id, p.raw_prompt = e.raw_prompt, p.prompt = e.prompt, p.where = e.where;
      prompts.push_back(std::move(p));
    }
    DecontaminationResult dc = decontaminate(prompts, eval_texts, cfg.decontamination, "SFT pairs");
    write_decontamination_report(r, dc, "decontamination_sft.json");
    std::vector<SftExample> kept;
    for (size_t k : dc.kept_index) kept.push_back(std::move(r.sft_examples[k]));
    r.sft_examples = std::move(kept);
  }
  check(!r.sft_examples.empty(), cfg.source, ": [sft] data has no examples (outside the held-out eval prompts",
        cfg.decontamination.enabled() ? " and not overlapping curation.decontaminate's evaluation sets)" : ")");
  r.say("sft: " + sft.summary() + "; " + std::to_string(sft.examples().size() - r.sft_examples.size()) +
        " pairs dropped because their prompt is a held-out eval prompt");
}

}  // namespace

void load_prompts_and_sft_pairs(RunContext& r) {
  // [curation] decontaminate: the evaluation sets, read once for [data] and [sft.data].
  const std::vector<EvalText> eval_texts =
      r.cfg.decontamination.enabled() ? load_eval_texts(r.cfg.decontamination) : std::vector<EvalText>{};
  if (r.cfg.has_data) load_prompts(r, eval_texts);
  if (r.cfg.sft.enabled) load_sft_pairs(r, eval_texts);
}

MemoryLevers memory_levers_here(const MemoryLevers& levers) { return with_machine_memory(levers, usable_memory_bytes()); }

CausalLM frozen_copy(CausalLMImpl& m) {
  CausalLM c = make_random_model(m.config(), 0, m.dtype(), m.device());
  torch::NoGradGuard ng;
  auto src = m.named_parameters();
  for (auto& p : c->named_parameters()) {
    p.value().copy_(src[p.key()]);
    p.value().set_requires_grad(false);
  }
  c->set_fast_cpu_path(m.fast_cpu_path());
  c->set_memory_levers(m.memory_levers());  // its passes padding-free where the policy's are
  return c;
}

CausalLM frozen_load(const fs::path& path, const TrainConfig& cfg) {
  LoadOptions lo;
  lo.dtype = cfg.model.dtype;
  lo.device = cfg.model.device;
  CausalLM m = load_model(path, lo).model;
  m->set_fast_cpu_path(cfg.model.fast_cpu_path);
  m->set_memory_levers(memory_levers_here(cfg.memory));  // its passes padding-free where the policy's are
  for (auto& p : m->parameters()) p.set_requires_grad(false);
  return m;
}

}  // namespace rlf

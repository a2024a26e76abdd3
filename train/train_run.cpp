#include "train/train_run.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>

#include "data/prompt_format.h"
#include "eval/evaluator.h"
#include "model/loader.h"
#include "rewards/registry.h"
#include "rollout/policy.h"
#include "train/checkpoint.h"
#include "train/grpo_trainer.h"
#include "train/metrics.h"
#include "train/plot.h"
#include "train/progress.h"
#include "util/error.h"
#include "util/fs.h"

namespace rlf {

namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// Greedy pass@1 of the policy on `examples` (eval/evaluator.h), with the
// run's completion limit, stop strings and accuracy component; -1 without examples.
double greedy_pass1(Policy& policy, const std::vector<PromptExample>& examples, RewardSet& rewards,
                    const GrpoOptions& g, bool add_special) {
  if (examples.empty()) return -1;
  EvalOptions o;
  o.n_samples = 1;
  o.temperature = 0.0;
  o.max_new_tokens = g.sampling.max_new_tokens;
  o.stop = g.sampling.stop_strings;
  o.accuracy_reward = g.accuracy_reward;
  o.add_special_tokens = add_special;
  o.max_batch_rows = g.max_batch_rows;
  return evaluate(policy, examples, rewards, o).pass_at_k.at(1);
}

// Episodes for SFT: prompt (weight 0) + response + EOS (weight 1).
std::vector<Episode> sft_episodes(const Policy& policy, const std::vector<SftExample>& examples,
                                  const std::vector<size_t>& idx, bool add_special) {
  std::vector<Episode> out;
  for (size_t i : idx) {
    const SftExample& ex = examples[i];
    auto prompt = policy.tokenizer->encode(ex.prompt, add_special);
    auto response = policy.tokenizer->encode(ex.response, false);
    check(!policy.eos_token_ids.empty(), "SFT needs an EOS token id (none found for the model)");
    response.push_back(policy.eos_token_ids.front());
    out.push_back(Episode::single_turn(0, prompt, response, std::vector<float>(response.size(), 0.0f)));
  }
  return out;
}

std::map<std::string, double> numeric(const Json& m) {
  std::map<std::string, double> out;
  for (auto& [k, v] : m.items())
    if (v.is_number() && k != "step") out[k] = v.get<double>();  // the writer owns "step"
  return out;
}

}  // namespace

Json TrainRunSummary::to_json() const {
  Json j;
  j["steps"] = steps;
  j["sft_steps"] = sft_steps;
  j["wall_s"] = wall_s;
  j["pass1_before"] = pass1_before < 0 ? Json(nullptr) : Json(pass1_before);
  j["pass1_after"] = pass1_after < 0 ? Json(nullptr) : Json(pass1_after);
  j["out_dir"] = out_dir.string();
  j["last_metrics"] = last_metrics;
  return j;
}

TrainRunSummary run_training(const TrainConfig& cfg, const TrainRunOptions& run) {
  auto t_start = Clock::now();
  namespace fs = std::filesystem;
  TrainRunSummary summary;
  summary.out_dir = cfg.out_dir;
  auto say = [&](const std::string& s) {
    if (!run.quiet) std::cout << s << std::endl;
  };

  // Load everything and check every record before any step.
  LoadOptions lo;
  lo.dtype = cfg.dtype;
  lo.device = cfg.device;
  Policy policy = load_policy(cfg.model_path, cfg.tokenizer_path, lo);
  policy.model()->set_fast_cpu_path(cfg.fast_cpu_path);
  TokenizerChat chat = tokenizer_chat_of(*policy.tokenizer);
  PromptDataset data = PromptDataset::load(cfg.data, &chat);
  check(!data.train().empty(), cfg.source, ": the dataset has no training records");
  RewardSet rewards = make_reward_set(cfg.rewards, cfg.source);
  for (const auto* split : {&data.train(), &data.eval()})
    for (const auto& ex : *split) rewards.check_record(ex.record, ex.reference, ex.where);
  say("data: " + data.summary());
  CausalLM reference{nullptr};
  if (cfg.grpo.update.kl_beta > 0) {
    reference = load_model(cfg.model_path, lo).model;
    reference->set_fast_cpu_path(cfg.fast_cpu_path);
    for (auto& p : reference->parameters()) p.set_requires_grad(false);
  }

  fs::create_directories(cfg.out_dir);
  const fs::path ckpt_dir = cfg.out_dir / "checkpoints";
  write_file_atomic(cfg.out_dir / "config.json", cfg.raw.dump(2));

  GrpoTrainer trainer(policy, data.train(), rewards, cfg.grpo, reference);
  CheckpointTargets targets;
  targets.model = policy.model().get();
  targets.optimizer = &trainer.optimizer();
  CheckpointOptions co;
  co.keep_last = cfg.keep_checkpoints;
  co.tokenizer_source = policy.tokenizer_path;
  std::optional<TrainerState> resumed;
  if (run.resume) {
    resumed = load_latest(ckpt_dir, targets, co);
    if (resumed) {
      trainer.set_steps_done(resumed->step);
      trainer.cursor().restore(resumed->data_cursor);
      summary.pass1_before = resumed->extra.value("pass1_before", -1.0);
      say("resumed from " + ckpt_dir.string() + " at step " + std::to_string(resumed->step));
    } else {
      say("no checkpoint in " + ckpt_dir.string() + ": starting fresh");
    }
  }

  // SFT warm start (fresh runs only).
  if (cfg.sft.enabled && !resumed) {
    SftDataset sft = SftDataset::load(cfg.sft.data, &chat);
    // Held-out prompts stay held out: SFT pairs whose prompt is an eval prompt are dropped.
    std::vector<SftExample> sft_examples = without_held_out_prompts(sft.examples(), data.eval());
    check(!sft_examples.empty(), cfg.source, ": [sft] data has no examples (outside the held-out eval prompts)");
    say("sft: " + sft.summary() + "; " + std::to_string(sft.examples().size() - sft_examples.size()) +
        " pairs dropped because their prompt is a held-out eval prompt");
    OptimizerOptions so = cfg.grpo.optimizer;
    Optimizer opt(*policy.model(), so);
    DataCursor cur(sft_examples.size(), DataCursorOptions{static_cast<size_t>(cfg.sft.batch_size), true, cfg.grpo.seed ^ 0x5F7ULL});
    ProgressOptions po;
    po.total_steps = cfg.sft.steps;
    po.plain_every = std::max<int64_t>(1, cfg.sft.steps / 20);  // logs (no TTY): ~20 lines
    po.label = "sft";
    po.force_plain = run.quiet;
    std::unique_ptr<ProgressBar> bar;
    if (!run.quiet) bar = std::make_unique<ProgressBar>(po);
    // Early stop: greedy pass@1 on training prompts (held-out ones stay unseen).
    const std::vector<PromptExample> stop_probe(
        data.train().begin(),
        data.train().begin() + std::min<size_t>(data.train().size(), static_cast<size_t>(cfg.sft.stop_eval_prompts)));
    double loss = 0, probe_pass1 = -1;
    int64_t done = 0;
    for (int64_t s = 0; s < cfg.sft.steps; ++s) {
      auto eps = sft_episodes(policy, sft_examples, cur.next_batch(), cfg.add_special_tokens);
      opt.zero_grad();
      UpdateStats st = accumulate_sft_gradients(*policy.model(), eps, cfg.sft.micro_batch_size);
      if (st.finite) opt.step(cfg.sft.lr, st.loss);
      loss = st.loss;
      done = s + 1;
      if (cfg.sft.stop_at_pass1 > 0 && done % cfg.sft.stop_eval_every == 0) {
        probe_pass1 = greedy_pass1(policy, stop_probe, rewards, cfg.grpo, cfg.add_special_tokens);
        if (probe_pass1 >= cfg.sft.stop_at_pass1) break;
      }
      if (bar) bar->update(done, {{"loss", loss}});
    }
    if (bar) bar->finish();
    summary.sft_steps = done;
    std::string stop_note;
    if (cfg.sft.stop_at_pass1 > 0)
      stop_note = ", training-prompt pass@1 " + std::to_string(probe_pass1) +
                  (probe_pass1 >= cfg.sft.stop_at_pass1 ? " (reached sft.stop_at_pass1)" : " (sft.stop_at_pass1 not reached)");
    say("sft: " + std::to_string(done) + " steps, final loss " + std::to_string(loss) + stop_note);
  }

  const bool add_special = cfg.add_special_tokens;
  if (!resumed) summary.pass1_before = greedy_pass1(policy, data.eval(), rewards, cfg.grpo, add_special);
  if (summary.pass1_before >= 0) say("held-out pass@1 before RL: " + std::to_string(summary.pass1_before));

  const int64_t start = trainer.steps_done();
  MetricsWriter metrics(cfg.out_dir / "metrics.jsonl", JsonlWriterOptions{start});
  SamplesWriter samples(cfg.out_dir / "samples.jsonl", SamplesLogOptions{cfg.samples_every, cfg.samples_per_step},
                        JsonlWriterOptions{start});
  ProgressOptions po;
  po.total_steps = cfg.steps;
  po.plain_every = std::max<int64_t>(1, cfg.steps / 20);
  po.start_step = start;
  po.force_plain = run.quiet;
  std::unique_ptr<ProgressBar> bar;
  if (!run.quiet) bar = std::make_unique<ProgressBar>(po);

  auto save = [&](int64_t step) {
    TrainerState st;
    st.step = step;
    st.scheduler_step = trainer.optimizer().step_count();
    st.data_cursor = trainer.cursor().state();
    st.extra = {{"pass1_before", summary.pass1_before}};
    save_checkpoint(ckpt_dir, st, targets, co);
  };

  for (int64_t step = start; step < cfg.steps; ++step) {
    Json m = trainer.step();
    if (cfg.eval_every > 0 && (step + 1) % cfg.eval_every == 0 && !data.eval().empty())
      m["eval/pass1"] = greedy_pass1(policy, data.eval(), rewards, cfg.grpo, add_special);
    m["data/skipped_records"] = static_cast<double>(data.n_skipped());  // malformed lines skipped at load (on_bad_record = "skip")
    metrics.write_step(step + 1, numeric(m));
    if (samples.due(step + 1)) {
      std::vector<SampleRecord> recs;
      for (const auto& g : trainer.last_groups()) {
        for (size_t i = 0; i < g.episodes.size(); ++i) {
          SampleRecord r;
          r.prompt = g.example->prompt;
          r.completion = g.episodes[i].completion_text;
          r.reward = g.totals[i] ? *g.totals[i] : std::nan("");
          for (size_t c = 0; c < g.scores.names.size(); ++c)
            if (g.scores.results[c][i].score) r.rewards[g.scores.names[c]] = *g.scores.results[c][i].score;
          r.advantage = g.episodes[i].advantage;
          r.extra = {{"id", g.example->id}, {"explanation", g.scores.describe(i)}};
          recs.push_back(std::move(r));
        }
      }
      samples.write(step + 1, recs);
    }
    if (bar) bar->update(step + 1, {{"reward", m.value("reward/mean", 0.0)}, {"acc", m.value("accuracy", 0.0)}});
    if (cfg.checkpoint_every > 0 && (step + 1) % cfg.checkpoint_every == 0 && step + 1 < cfg.steps) save(step + 1);
    summary.last_metrics = m;
  }
  if (bar) bar->finish();
  summary.steps = trainer.steps_done();
  save(summary.steps);
  summary.pass1_after = greedy_pass1(policy, data.eval(), rewards, cfg.grpo, add_special);
  {
    // Plot the curves this run has (eval/pass1 only with eval_every > 0).
    std::vector<std::string> keys;
    auto records = read_jsonl(cfg.out_dir / "metrics.jsonl");
    for (const char* k : {"reward/mean", "accuracy", "eval/pass1", "completion/length_mean", "policy/entropy", "kl/ref"})
      if (std::any_of(records.begin(), records.end(), [&](const Json& r) { return r.contains(k) && r[k].is_number(); }))
        keys.push_back(k);
    if (!keys.empty()) write_metrics_plot(cfg.out_dir / "metrics.jsonl", cfg.out_dir / "plot.html", keys);
  }
  summary.wall_s = since(t_start);
  write_file_atomic(cfg.out_dir / "summary.json", summary.to_json().dump(2));
  if (!run.quiet) {
    auto records = read_jsonl(cfg.out_dir / "metrics.jsonl");
    std::cout << format_metrics_summary(summarize_metrics(records, {"reward/mean", "accuracy", "completion/length_mean",
                                                                     "policy/entropy", "time/step_s"}));
    if (summary.pass1_before >= 0)
      std::printf("held-out pass@1: before %.3f  after %.3f\n", summary.pass1_before, summary.pass1_after);
    std::cout << "run directory: " << cfg.out_dir.string() << " (metrics.jsonl, samples.jsonl, plot.html, checkpoints/)\n";
  }
  return summary;
}

}  // namespace rlf

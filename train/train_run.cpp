#include "train/train_run.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>

#include "model/lora.h"
#include "model/loader.h"
#include "train/checkpoint.h"
#include "train/demo.h"
#include "train/failed_steps.h"
#include "train/metrics.h"
#include "train/plot.h"
#include "train/progress.h"
#include "model/flops.h"
#include "train/perf_metrics.h"
#include "train/rollout_pipeline.h"
#include "train/phase_memory.h"
#include "util/memory_usage.h"
#include "train/run_context.h"
#include "train/run_kind.h"
#include "train/run_preflight.h"
#include "train/warm_start.h"
#include "util/clock.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/seed.h"
#include "util/write_target.h"

namespace rlf {

namespace fs = std::filesystem;

namespace {

using Clock = std::chrono::steady_clock;

std::map<std::string, double> numeric_metrics(const Json& m) {
  std::map<std::string, double> out;
  for (auto& [k, v] : m.items())
    if (v.is_number() && k != "step") out[k] = v.get<double>();  // the writer owns "step"
  return out;
}

// Every rank runs the same config and build (checked before anything long runs); every
// step source splits its batch over the ranks (Shard).
void check_ranks(const TrainConfig& cfg, Reducer& reducer, const RunKind& kind) {
  const int64_t world = reducer.world_size();
  if (world == 1) return;
  check_same_config(reducer, rlf_build_id() + "\n" + cfg.raw.dump());
  check(!cfg.rl.replay.enabled, cfg.source, ": replay.enabled keeps its buffer in one process; it is not supported "
        "with WORLD_SIZE = ", world, " yet");
  check(!cfg.rl.lessons.enabled, cfg.source, ": lessons.enabled keeps its lesson pool in one process; it is not "
        "supported with WORLD_SIZE = ", world, " yet");
  check(!cfg.rl.pool.enabled() || !cfg.rl.dynamic_sampling, cfg.source, ": curation.difficulty_pool and "
        "curation.reward_disagreement sum each rollout round's outcomes over the ranks in lockstep, but "
        "algorithm.dynamic_sampling lets ranks run different rounds: not supported with WORLD_SIZE = ", world,
        " yet (turn one of them off)");
  kind.check_world(world);
}

// The KL reference: the policy as the steps start, unless algorithm.kl_reference = "initial". After a warm
// start that is the warmed policy, saved in run.out_dir/reference so a resume uses the same one; without a
// warm start it is the model as loaded. With LoRA: the base with the adapters off (the same tensors).
CausalLM make_reference(RunContext& r, bool needed, bool warmed, bool resumed) {
  const TrainConfig& cfg = r.cfg;
  const fs::path ref_dir = cfg.run.out_dir / "reference";
  if (r.writer() && !resumed && fs::exists(ref_dir)) fs::remove_all(ref_dir);  // a fresh run never reuses another run's
  if (!needed) return nullptr;
  if (cfg.lora.enabled) return lora_base_view(*r.policy.model());
  if (warmed && cfg.loss.kl_reference == KlReference::RlStart) {
    CausalLM reference = frozen_copy(*r.policy.model());
    SaveOptions so;
    so.tokenizer_source = r.policy.tokenizer_path;
    if (r.writer()) save_model(*reference, ref_dir, so);
    return reference;
  }
  if (resumed && cfg.loss.kl_reference == KlReference::RlStart && fs::exists(ref_dir / "config.json"))
    return frozen_load(ref_dir, cfg);
  return frozen_load(cfg.model_path(), cfg);
}

// The run's checkpoints: the policy and its optimiser, PPO's critic, the data cursor and the kind's state.
struct Checkpoints {
  RunContext& r;
  RunKind& kind;
  TrainRunSummary& summary;
  fs::path dir;
  CheckpointTargets targets;
  CheckpointOptions options;
  int64_t last_saved = -1;

  Checkpoints(RunContext& r_, RunKind& kind_, TrainRunSummary& summary_)
      : r(r_), kind(kind_), summary(summary_), dir(r.cfg.run.out_dir / "checkpoints") {
    targets.model = r.policy.model().get();
    targets.optimizer = &kind.trainer().optimizer();
    if (ValueModel* value = kind.value(); value && value->trainer())
      targets.companions["value"] = CompanionTarget{value->model().get(), &value->trainer()->optimizer()};
    for (const auto& [name, model] : kind.checkpoint_models()) targets.models[name] = model.ptr().get();
    options.keep_last = r.cfg.run.keep_checkpoints;
    options.tokenizer_source = r.policy.tokenizer_path;
    options.model_extras = [this](const fs::path& model_dir) { kind.save_model_extras(model_dir); };
  }

  void save(int64_t step, int64_t tokens_used) {
    TrainerState st;
    st.step = step;
    st.scheduler_step = kind.trainer().optimizer().step_count();
    st.data_cursor = kind.cursor().state();
    st.extra = {{"pass1_before", summary.pass1_before}, {"lr_horizon", kind.trainer().lr_horizon()},
                {"rollout_tokens", tokens_used}, {"preference_before", summary.preference_before}};
    if (Json s = kind.extra_state(); !s.is_null()) st.extra["source"] = std::move(s);
    if (r.writer()) {
      summary.final_model = save_checkpoint(dir, st, targets, options) / "model";
      for (const auto& [name, report] : kind.reports(step)) {
        ensure_directory(r.cfg.run.out_dir / "curation");
        write_file_atomic(r.cfg.run.out_dir / "curation" / name, report.dump(2));
      }
    }
    last_saved = step;
  }

  // Restores `from`; returns the step it was saved at and the tokens generated until then.
  std::pair<int64_t, int64_t> resume(const fs::path& from) {
    TrainerState st = load_checkpoint(from, targets, options);
    kind.restore_extra_state(st.extra.value("source", Json(nullptr)));
    kind.cursor().restore(st.data_cursor);
    summary.pass1_before = st.extra.value("pass1_before", -1.0);
    summary.preference_before = st.extra.value("preference_before", Json(nullptr));
    r.say("resumed from " + from.string() + " at step " + std::to_string(st.step));
    // A changed run.steps would re-plan a decaying schedule under the steps already taken:
    // the resumed run keeps the horizon it started with (after it, the rate stays at lr_min).
    Trainer& trainer = kind.trainer();
    const int64_t horizon = st.extra.value("lr_horizon", trainer.lr_horizon());
    if (horizon != trainer.lr_horizon() && r.cfg.trainer.lr.kind != LrScheduleKind::Constant) {
      std::cerr << "resume: the " << lr_schedule_kind_name(r.cfg.trainer.lr.kind)
                << " schedule keeps its original horizon of " << horizon << " optimiser steps (the config now asks for "
                << trainer.lr_horizon() << "); after it the rate stays at optim.lr_min" << std::endl;
      trainer.set_lr_horizon(horizon);
      if (ValueModel* value = kind.value(); value && value->trainer()) value->trainer()->set_lr_horizon(horizon);
    }
    last_saved = st.step;
    return {st.step, st.extra.value("rollout_tokens", int64_t{0})};
  }
};

// The trainer steps from `start` to run.steps (or run.rollout_token_budget): the kind's episodes (sampled ahead
// on the rollout copy with asynchronous rollouts) -> trainer update -> metrics.jsonl, samples.jsonl, progress,
// periodic checkpoints.
struct StepLoop {
  RunContext& r;
  RunKind& kind;
  Checkpoints& ckpt;
  TrainRunSummary& summary;
  int64_t start, tokens_used;
  std::unique_ptr<MetricsWriter> metrics;
  std::unique_ptr<SamplesWriter> samples;
  std::unique_ptr<ProgressBar> bar;
  std::unique_ptr<RolloutPipeline> pipeline;
  FailedStepWatch failed_steps;
  StepPerf perf;
  int64_t notes_shown = 0;

  StepLoop(RunContext& r_, RunKind& kind_, Checkpoints& ckpt_, TrainRunSummary& summary_, int64_t start_, int64_t tokens)
      : r(r_), kind(kind_), ckpt(ckpt_), summary(summary_), start(start_), tokens_used(tokens),
        failed_steps(kind.counts_failed_steps() ? r.cfg.run.max_failed_steps : 0) {
    const TrainConfig& cfg = r.cfg;
    CausalLMImpl& policy = *r.policy.model();
    // The peak at 2048³ (model/flops.h): 1024³ read 127 GFLOP/s in a stories110M GRPO run on the 2-core
    // AMD EPYC Zen 3 whose update then showed perf/mfu_fwd_bwd 1.03.
    perf = StepPerf{policy.config(), policy.device().is_cpu() ? measure_matmul_peak(policy.dtype()) : 0.0,
                    !cfg.lora.enabled, kind.needs_reference(), cfg.trainer.epochs,
                    kind.trainer().logprobs_over_kept_sets()};
    if (r.writer()) {
      metrics = std::make_unique<MetricsWriter>(cfg.run.out_dir / "metrics.jsonl", JsonlWriterOptions{start},
                                                cfg.run.tensorboard ? cfg.run.out_dir : fs::path());
      samples = std::make_unique<SamplesWriter>(cfg.run.out_dir / "samples.jsonl",
                                                SamplesLogOptions{cfg.run.samples_every, cfg.run.samples_per_step},
                                                JsonlWriterOptions{start});
    }
    ProgressOptions po;
    po.total_steps = cfg.run.steps;
    po.plain_every = std::max<int64_t>(1, cfg.run.steps / 20);
    po.start_step = start;
    po.force_plain = r.opts.quiet;
    if (!r.opts.quiet) bar = std::make_unique<ProgressBar>(po);
    // Asynchronous rollouts: batches sampled ahead on the rollout copy; nothing in flight across the first step
    // or a checkpoint boundary, so a resumed run is an uninterrupted one.
    if (CausalLM rollout = kind.rollout_model(); !rollout.is_empty()) {
      const int64_t every = cfg.run.checkpoint_every;
      pipeline = std::make_unique<RolloutPipeline>(
          r.policy.model(), rollout, cfg.rl.max_staleness,
          [s0 = start, every](int64_t s) { return s == s0 || (every > 0 && s % every == 0); }, cfg.run.steps,
          [this](int64_t s, int32_t version) {
            RolloutBatch b;
            b.episodes = kind.next(s, version, b.metrics);
            if (samples && samples->due(s + 1)) b.samples = kind.samples();
            return b;
          });
    }
  }

  // Runs the steps; returns the number of steps completed when it ends.
  int64_t run() {
    const int64_t budget = r.cfg.run.rollout_token_budget;
    int64_t end = std::max(start, r.cfg.run.steps);
    for (int64_t step = start; step < r.cfg.run.steps; ++step) {
      if (budget > 0 && tokens_used >= budget) {
        end = step;
        break;
      }
      Json m = one_step(step);
      const bool budget_spent = budget > 0 && tokens_used >= budget;
      if (budget_spent) end = step + 1;
      const int64_t every = r.cfg.run.checkpoint_every;
      if (every > 0 && (step + 1) % every == 0 && step + 1 < r.cfg.run.steps && !budget_spent)
        ckpt.save(step + 1, tokens_used);
      summary.last_metrics = m;
    }
    if (bar) bar->finish();
    if (pipeline) pipeline->wait_idle();  // batches launched past the end are discarded; the state is read after
    return end;
  }

  // mem/rss_peak_mb_update (the run's so far with a rollout pipeline, whose phases overlap) and what the memory
  // levers' auto settings did so far (model/memory_levers.h).
  void memory_metrics(const PhasePeak& update_peak, Json& m) const {
    update_peak.write(m, pipeline ? "run" : "update");
    const auto& uses = r.policy.model()->memory_lever_uses();
    m["mem/checkpointed_forwards"] = uses.checkpointed_forwards;
    m["mem/recomputed_logprob_calls"] = uses.recomputed_logprob_calls;
  }

  Json one_step(int64_t step) {
    const TrainConfig& cfg = r.cfg;
    auto t0 = Clock::now();
    const double payload0 = r.reducer.payload_bytes();
    Json m;
    m["step"] = step + 1;
    const int32_t version = static_cast<int32_t>(kind.trainer().optimizer().step_count());
    std::vector<Episode> episodes;
    std::vector<SampleRecord> batch_samples;
    if (pipeline) {
      RolloutBatch b = pipeline->take(step, version);
      episodes = std::move(b.episodes);
      batch_samples = std::move(b.samples);
      m.update(b.metrics);
      m["rollout/staleness"] = step - b.sampled_at;  // trainer steps between the sampling weights and these
      m["time/rollout_wait_s"] = seconds_since(t0);  // what the rollouts still cost the step after overlapping
    } else {
      episodes = kind.next(step, version, m);
    }
    auto t_update = Clock::now();
    PhasePeak update_peak(r.policy.model()->device());
    if (!pipeline) update_peak.begin();
    // LoRA dropout masks: drawn from (run.seed, step), so a resumed step draws the same ones.
    if (cfg.lora.enabled && r.policy.model()->lora->options.dropout > 0)
      r.policy.model()->lora->dropout_gen.set_current_seed(derive_seed(cfg.run.seed, SeedStream::LoraDropoutStep) +
                                                           static_cast<uint64_t>(step));
    m.update(kind.trainer().update(episodes, step));
    ValueModel* value = kind.value();
    if (value) m.update(value->update(episodes, step));
    m["time/update_s"] = seconds_since(t_update);
    memory_metrics(update_peak, m);
    m["time/step_s"] = seconds_since(t0);
    perf.add_metrics(episodes, m);
    const int64_t world = r.reducer.world_size();
    m["dist/world_size"] = world;
    m["dist/payload_mb"] = (r.reducer.payload_bytes() - payload0) / 1e6;
    if (world > 1 && cfg.dist.check_every > 0 && (step + 1) % cfg.dist.check_every == 0) {
      std::vector<torch::Tensor> params = r.policy.model()->parameters();
      if (value && value->trainer())
        for (const auto& p : value->model()->parameters()) params.push_back(p);
      check_replicas_agree(r.reducer, params, step + 1);
    }
    if (const std::optional<int64_t> n = kind.generated_tokens(m)) {
      tokens_used += *n;
      m["rollout/tokens_total"] = tokens_used;
    }
    summary.steps_wall_s += seconds_since(t0);
    kind.observe(step + 1, m);
    const std::optional<std::string> every_episode_failed = failed_steps.add(step + 1, m, episodes);
    if (m.contains("notes")) {
      for (const auto& n : m["notes"])
        if (notes_shown++ < 20) r.say("step " + std::to_string(step + 1) + ": " + n.get<std::string>());
      m.erase("notes");
    }
    if (kind.measures_pass1() && cfg.run.eval_every > 0 && (step + 1) % cfg.run.eval_every == 0 && !r.eval.empty()) {
      if (pipeline) pipeline->wait_idle();  // the environment and rewards are the rollouts' too
      m["eval/pass1"] = r.greedy_pass1(r.eval);
    }
    if (r.data) m["data/skipped_records"] = static_cast<double>(r.data->n_skipped() + r.n_too_long);
    if (cfg.decontamination.enabled()) m["data/decontaminated_prompts"] = static_cast<double>(r.n_decontaminated);
    if (metrics) metrics->write_step(step + 1, numeric_metrics(m));
    if (samples && samples->due(step + 1)) samples->write(step + 1, pipeline ? batch_samples : kind.samples());
    if (every_episode_failed) {
      if (bar) bar->finish();
      fail(cfg.source, ": ", *every_episode_failed);
    }
    if (bar) bar->update(step + 1, kind.progress(m));
    return m;
  }
};

// plot.html: the curves this run has (eval/pass1 only with eval_every > 0).
void write_plot(const TrainConfig& cfg) {
  std::vector<std::string> keys;
  auto records = read_jsonl(cfg.run.out_dir / "metrics.jsonl");
  for (const char* k : {"reward/mean", "accuracy", "eval/pass1", "episode/turns_mean", "completion/length_mean",
                        "policy/entropy", "kl/ref", "loss/ce", "loss/pref", "pref/accuracy", "pref/margin", "loss/rm",
                        "rm/accuracy", "rm/margin", "loss/rm_rating", "loss/prm", "prm/accuracy", "loss/value",
                        "value/explained_variance", "kl/beta"})
    if (std::any_of(records.begin(), records.end(), [&](const Json& x) { return x.contains(k) && x[k].is_number(); }))
      keys.push_back(k);
  if (!keys.empty()) write_metrics_plot(cfg.run.out_dir / "metrics.jsonl", cfg.run.out_dir / "plot.html", keys);
}

// The table of the kind's headline metrics and the held-out results.
void print_report(const TrainConfig& cfg, const RunKind& kind, const TrainRunSummary& summary) {
  auto records = read_jsonl(cfg.run.out_dir / "metrics.jsonl");
  std::cout << format_metrics_summary(summarize_metrics(records, kind.table_keys()));
  if (summary.pass1_before >= 0)
    std::printf("held-out pass@1: before %.3f  after %.3f\n", summary.pass1_before, summary.pass1_after);
  if (summary.pass1_control >= 0) std::printf("held-out pass@1 of the SFT-only control: %.3f\n", summary.pass1_control);
  kind.print_held_out(summary);
  std::cout << "run directory: " << cfg.run.out_dir.string() << " (metrics.jsonl, samples.jsonl, plot.html, checkpoints/)\n";
}

}  // namespace

Json TrainRunSummary::to_json() const {
  Json j;
  j["kind"] = kind;
  j["steps"] = steps;
  j["sft_steps"] = sft_steps;
  j["wall_s"] = wall_s;
  j["steps_wall_s"] = steps_wall_s;
  auto opt = [](double v) { return v < 0 ? Json(nullptr) : Json(v); };
  j["pass1_before"] = opt(pass1_before);
  j["pass1_after"] = opt(pass1_after);
  j["pass1_control"] = opt(pass1_control);
  if (kl_to_model_before >= 0 || kl_to_model_after >= 0) {
    j["kl_to_model_before"] = opt(kl_to_model_before);
    j["kl_to_model_after"] = opt(kl_to_model_after);
  }
  if (pass1_control >= 0) j["control_sft_steps"] = control_sft_steps;
  const std::string held_out = process ? "process" : "preference";
  if (!preference_before.is_null()) j[held_out + "_before"] = preference_before;
  if (!preference_after.is_null()) j[held_out + "_after"] = preference_after;
  j["turns_mean"] = last_metrics.contains("episode/turns_mean") ? last_metrics["episode/turns_mean"] : Json(nullptr);
  j["rollout_tokens"] = rollout_tokens;
  j["world_size"] = world_size;
  j["out_dir"] = out_dir.string();
  j["final_model"] = final_model.empty() ? Json(nullptr) : Json(final_model.string());
  j["last_metrics"] = last_metrics;
  return j;
}

TrainRunSummary run_training(const TrainConfig& cfg, const TrainRunOptions& opts) {
  auto t_start = Clock::now();
  const std::unique_ptr<RunKind> kind = make_run_kind(cfg);
  TrainRunSummary summary;
  summary.kind = kind->name();
  summary.out_dir = cfg.run.out_dir;
  kind->fill_summary(summary);

  // 1. Load everything and check every record before any step; the paths first, before anything is written.
  check_run_paths(cfg, !opts.reducer || opts.reducer->writes());
  if (!cfg.model.random_init.empty())
    ensure_demo_policy(cfg.model_path(), cfg.run.seed, cfg.model.random_init_context);
  LocalReducer one_process;
  Reducer& reducer = opts.reducer ? *opts.reducer : one_process;
  summary.world_size = reducer.world_size();
  check_ranks(cfg, reducer, *kind);
  RunContext r = load_run_context(cfg, opts, reducer);
  load_rewards_and_env(r);
  kind->load_models(r);
  load_prompts_and_sft_pairs(r);
  kind->load_data(r);
  check_run_companions(cfg, *r.policy.model(), r.train);
  if (r.writer()) {
    with_context(cfg.source + ": run.out_dir", [&] { ensure_directory(cfg.run.out_dir); });
    write_file_atomic(cfg.run.out_dir / "config.json", cfg.raw.dump(2));
  }
  const fs::path ckpt_dir = cfg.run.out_dir / "checkpoints";
  const std::optional<fs::path> resume_from = opts.resume ? find_latest_checkpoint(ckpt_dir) : std::nullopt;
  if (opts.resume && !resume_from) r.say("no checkpoint in " + ckpt_dir.string() + ": starting fresh");
  kind->load_companions(r);

  // 2. Warm start (fresh runs only), trained or loaded from run.warm_start_cache.
  WarmStart warm;
  if (kind->warm_starts() && cfg.sft.enabled && !resume_from) warm = run_warm_start(r);
  summary.sft_steps = warm.steps;

  // 3. The kind's model (LoRA), the KL reference, then its heads, loss terms, trainer and step source: the
  // trainer is built after the warm start, so its optimizer snapshots the warmed weights.
  kind->prepare(r);
  const CausalLM reference = make_reference(r, kind->needs_reference(), warm.warmed, resume_from.has_value());
  kind->start(r, reference, warm.warmed, resume_from.has_value());
  check(!kind->trainer().needs_reference() || reference, "a loss term needs a reference model and none is configured");

  // 4. Resume, or measure before the steps.
  Checkpoints ckpt(r, *kind, summary);
  const auto [start, tokens_before] = resume_from ? ckpt.resume(*resume_from) : std::pair<int64_t, int64_t>{0, 0};
  if (!resume_from && kind->measures_pass1()) summary.pass1_before = r.greedy_pass1(r.eval);
  if (summary.pass1_before >= 0) r.say("held-out pass@1 before: " + std::to_string(summary.pass1_before));
  if (!resume_from && kind->measures_pass1()) summary.kl_to_model_before = r.kl_to_model(r.eval);
  if (!resume_from) summary.preference_before = kind->held_out_before(r);
  if (!resume_from && !summary.preference_before.is_null())
    r.say("held-out preferences before: " + summary.preference_before.dump());

  // 5. Steps, then the final checkpoint (a resume that had nothing left to do keeps the one it loaded).
  StepLoop loop(r, *kind, ckpt, summary, start, tokens_before);
  summary.steps = loop.run();
  summary.rollout_tokens = loop.tokens_used;
  const int64_t budget = cfg.run.rollout_token_budget;
  if (budget > 0 && summary.steps < cfg.run.steps)
    r.say("run.rollout_token_budget = " + std::to_string(budget) + " reached after " + std::to_string(summary.steps) +
          " steps (" + std::to_string(loop.tokens_used) + " tokens)");
  kind->finish_steps(r, resume_from, resume_from && ckpt.last_saved == summary.steps);
  if (ckpt.last_saved != summary.steps) ckpt.save(summary.steps, loop.tokens_used);
  else if (resume_from) summary.final_model = *resume_from / "model";

  // 6. Finish: held-out measurements after, the SFT control, plot.html, summary.json, the table.
  if (kind->measures_pass1()) summary.pass1_after = r.greedy_pass1(r.eval);
  if (kind->measures_pass1()) summary.kl_to_model_after = r.kl_to_model(r.eval);
  summary.preference_after = kind->held_out_after(r);
  if (!summary.preference_after.is_null()) r.say("held-out preferences after: " + summary.preference_after.dump());
  if (cfg.run.sft_control && warm.trainer && summary.pass1_after >= 0) {
    summary.pass1_control = sft_control(r, warm, summary.steps_wall_s, &summary.control_sft_steps);
    r.say("control (SFT alone for " + std::to_string(summary.steps_wall_s) + " s, " +
          std::to_string(summary.control_sft_steps) + " steps): held-out pass@1 " + std::to_string(summary.pass1_control));
  }
  if (r.writer()) write_plot(cfg);
  summary.wall_s = seconds_since(t_start);
  if (r.writer()) write_file_atomic(cfg.run.out_dir / "summary.json", summary.to_json().dump(2));
  if (r.writer() && !opts.quiet) print_report(cfg, *kind, summary);
  return summary;
}

}  // namespace rlf

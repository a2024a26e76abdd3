#include "train/warm_start.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>

#include "model/loader.h"
#include "train/loss_terms.h"
#include "train/progress.h"
#include "util/clock.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/hash.h"
#include "util/json_util.h"
#include "util/seed.h"

namespace rlf {

namespace fs = std::filesystem;

namespace {

// run.warm_start_cache: the warmed policy of a (model, data, sft, seed) key,
// in CACHE/<hash of the key>/{model/, meta.json}; meta.json holds the key
// itself, so a hash collision is a miss.
Json warm_start_key(const TrainConfig& cfg) {
  Json key{{"version", 1},
           {"model", cfg.raw.at("model")},
           {"data", cfg.raw.at("data")},
           {"sft", cfg.raw.at("sft")},
           {"seed", cfg.run.seed}};
  // A critic writes the feedback targets' critiques (sft.data.feedback_text with {critique}) or the prompts'
  // feedback prefixes (sft.data.feedback_prefix).
  if ((cfg.sft.data.feedback_fraction > 0 && cfg.sft.data.feedback_text.find("{critique}") != std::string::npos) ||
      !cfg.sft.data.feedback_prefix.empty())
    key["critic"] = cfg.raw.value("critic", Json::object());
  // Decontamination changes the SFT pairs and the training prompts the early stop measures.
  if (cfg.decontamination.enabled())
    key["decontaminate"] = {{"sources", cfg.decontamination.sources},
                            {"ngram", cfg.decontamination.ngram},
                            {"overlap_threshold", cfg.decontamination.overlap_threshold}};
  return key;
}

fs::path warm_start_dir(const TrainConfig& cfg) {
  return fs::path(cfg.run.warm_start_cache) / fnv1a64_hex(warm_start_key(cfg).dump());
}

bool load_cached_warm_start(RunContext& r, int64_t* sft_steps) {
  const fs::path dir = warm_start_dir(r.cfg);
  if (!fs::exists(dir / "meta.json") || !fs::exists(dir / "model" / "config.json")) return false;
  const Json meta = read_json_file((dir / "meta.json").string());
  if (meta.value("key", Json()) != warm_start_key(r.cfg)) return false;
  LoadOptions lo;
  lo.dtype = r.cfg.model.dtype;
  lo.device = r.cfg.model.device;
  CausalLM saved = load_model(dir / "model", lo).model;
  torch::NoGradGuard ng;
  auto src = saved->named_parameters();
  for (auto& p : r.policy.model()->named_parameters()) {
    check(src.contains(p.key()), dir.string(), ": the cached warm start lacks ", p.key());
    p.value().copy_(src[p.key()]);
  }
  *sft_steps = meta.value("sft_steps", int64_t{0});
  r.say("sft: warm start loaded from " + dir.string() + " (" + std::to_string(*sft_steps) + " steps, run.warm_start_cache)");
  return true;
}

void save_cached_warm_start(RunContext& r, int64_t sft_steps) {
  const fs::path dir = warm_start_dir(r.cfg);
  const fs::path tmp = dir.string() + ".tmp-" + std::to_string(::getpid());
  fs::remove_all(tmp);
  try {
    SaveOptions so;
    so.tokenizer_source = r.policy.tokenizer_path;
    save_model(*r.policy.model(), tmp / "model", so);
    write_file_atomic(tmp / "meta.json", Json{{"key", warm_start_key(r.cfg)}, {"sft_steps", sft_steps}}.dump(2));
  } catch (const std::exception& e) {
    std::error_code ignored;
    fs::remove_all(tmp, ignored);  // no half-written cache entry left behind
    fail("run.warm_start_cache: saving the warm start to '", dir.string(), "': ", e.what());
  }
  std::error_code ec;
  fs::rename(tmp, dir, ec);  // another run may have saved the same warm start first: keep that one
  if (ec) fs::remove_all(tmp);
}

// The SFT steps of the warm start, with its early stop.
void train_warm_start(RunContext& r, WarmStart& w) {
  const TrainConfig& cfg = r.cfg;
  TrainerOptions to;
  to.micro_batch_size = cfg.sft.micro_batch_size;
  to.seed = cfg.run.seed;
  to.log_entropy = false;
  to.log_rollout_agreement = false;
  to.optimizer = cfg.trainer.optimizer;
  to.lr.kind = LrScheduleKind::Constant;
  to.lr.lr = cfg.sft.lr;
  std::vector<std::unique_ptr<LossTerm>> terms;
  terms.push_back(std::make_unique<CrossEntropyTerm>());
  w.trainer = std::make_unique<Trainer>(r.policy.model(), std::move(terms), to, r.reducer);
  w.source = std::make_unique<SftSource>(r, cfg.sft.batch_size, derive_seed(cfg.run.seed, SeedStream::SftOrder), /*one_group=*/true);
  ProgressOptions po;
  po.total_steps = cfg.sft.steps;
  po.plain_every = std::max<int64_t>(1, cfg.sft.steps / 20);  // logs (no TTY): ~20 lines
  po.label = "sft";
  po.force_plain = r.opts.quiet;
  std::unique_ptr<ProgressBar> bar;
  if (!r.opts.quiet) bar = std::make_unique<ProgressBar>(po);
  // Early stop: greedy pass@1 on training prompts (held-out ones stay unseen).
  const std::vector<PromptExample> probe(
      r.train.begin(), r.train.begin() + std::min<size_t>(r.train.size(), static_cast<size_t>(cfg.sft.stop_eval_prompts)));
  double loss = 0, probe_pass1 = -1;
  for (int64_t s = 0; s < cfg.sft.steps; ++s) {
    Json m;
    auto eps = w.source->next(m);
    Json u = w.trainer->update(eps, s);
    loss = u.value("loss/ce", 0.0);
    w.steps = s + 1;
    if (cfg.sft.stop_at_pass1 > 0 && w.steps % cfg.sft.stop_eval_every == 0) {
      probe_pass1 = r.greedy_pass1(probe);
      if (probe_pass1 >= cfg.sft.stop_at_pass1) break;
    }
    if (bar) bar->update(w.steps, {{"loss", loss}});
  }
  if (bar) bar->finish();
  std::string stop_note;
  if (cfg.sft.stop_at_pass1 > 0)
    stop_note = ", training-prompt pass@1 " + std::to_string(probe_pass1) +
                (probe_pass1 >= cfg.sft.stop_at_pass1 ? " (reached sft.stop_at_pass1)" : " (sft.stop_at_pass1 not reached)");
  r.say("sft: " + std::to_string(w.steps) + " steps, final loss " + std::to_string(loss) + stop_note);
  if (cfg.run.sft_control) {
    torch::NoGradGuard ng;
    for (auto& p : r.policy.model()->parameters()) w.weights.push_back(p.detach().clone());
  }
}

}  // namespace

WarmStart run_warm_start(RunContext& r) {
  WarmStart w;
  const bool cached = !r.cfg.run.warm_start_cache.empty();
  w.warmed = true;
  // run.sft_control continues the warm start's own optimiser, which the cache does not hold: such a run
  // trains its warm start, and saves it for the runs that follow.
  if (cached && !r.cfg.run.sft_control && load_cached_warm_start(r, &w.steps)) return w;
  train_warm_start(r, w);
  if (cached && r.writer()) save_cached_warm_start(r, w.steps);
  return w;
}

double sft_control(RunContext& r, WarmStart& w, double seconds, int64_t* steps) {
  {
    torch::NoGradGuard ng;
    auto params = r.policy.model()->parameters();
    for (size_t i = 0; i < params.size(); ++i) params[i].copy_(w.weights[i]);
    w.trainer->optimizer().sync_master_from_params();
  }
  auto t0 = std::chrono::steady_clock::now();
  int64_t s = w.steps;
  while (seconds_since(t0) < seconds) {
    Json m;
    w.trainer->update(w.source->next(m), s);
    ++s;
  }
  *steps = s - w.steps;
  return r.greedy_pass1(r.eval);
}

}  // namespace rlf

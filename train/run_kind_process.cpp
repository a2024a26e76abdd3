// The process-reward-model kind of run (trainer.kind = "rm" with
// [process.data]): step-labelled solutions (train/process_steps.h
// process_episode), the labels given or estimated by Math-Shepherd's Monte
// Carlo rollouts of the (warmed) policy (process.labels = "monte_carlo",
// saved in run.out_dir/monte_carlo_labels.json for a resume), the backbone
// with a score head trained by the prm term at each step's last token.
#include <cstdio>
#include <filesystem>

#include "data/step_dataset.h"
#include "eval/eval_options.h"
#include "rm/process_reward.h"
#include "train/fitting_records.h"
#include "train/loss_terms.h"
#include "train/process_steps.h"
#include "train/run_kind.h"
#include "train/run_kind_dataset.h"
#include "train/run_kind_reward_model.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/seed.h"
#include "util/write_target.h"

namespace rlf {

namespace {

// Step-labelled solutions whose prompt + solution + EOS exceed the context
// are bad records, as preference pairs are.
std::vector<StepExample> fitting_solutions(const std::vector<StepExample>& in, RunContext& r, int64_t* n_dropped) {
  const int64_t limit = r.policy.model()->config().max_position_embeddings;
  return fitting_records(
      in, limit, r.cfg.process.data.on_bad_record == "skip", *n_dropped,
      [&](const StepExample& e) {
        return static_cast<int64_t>(r.policy.tokenizer->encode(e.prompt, r.cfg.rl.add_special_tokens).size() +
                                    r.policy.tokenizer->encode(e.response(r.cfg.process.data.delimiter)).size()) +
               1;
      },
      [&](const StepExample& e, int64_t n) {
        return str(e.where, ": the prompt and solution (", n - 1, " tokens) do not fit the model's context of ", limit,
                   " tokens; shorten it, or set process.data.on_bad_record = \"skip\"");
      });
}

class ProcessKind final : public RunKind {
 public:
  explicit ProcessKind(const TrainConfig& cfg) : cfg_(cfg) {}
  const char* name() const override { return "rm"; }

  void load_data(RunContext& r) override {
    data_ = std::make_unique<StepDataset>(StepDataset::load(cfg_.process.data, &r.chat));
    int64_t n_long = 0;
    train_ = fitting_solutions(data_->train(), r, &n_long);
    eval_ = fitting_solutions(data_->eval(), r, &n_long);
    check(!train_.empty(), cfg_.source, ": [process.data] has no training solutions that fit the context");
    r.say(data_->summary() + (n_long ? "; " + std::to_string(n_long) + " too long for the context skipped" : ""));
  }
  void prepare(RunContext&) override {}  // LoRA goes on once the score head is (start)
  bool needs_reference() const override { return cfg_.rl.kl_beta > 0; }

  void start(RunContext& r, CausalLM, bool warmed, bool resumed) override {
    if (cfg_.process.labels == ProcessLabels::MonteCarlo) monte_carlo_labels(r, resumed);
    for (const StepExample& e : eval_)
      check(e.labels.size() == e.steps.size(), e.where, ": a held-out solution needs its labels (the gold standard "
            "the PRM is measured against); give them, or set process.data.eval_size = 0");
    add_score_head(r, {}, warmed);
    freeze_backbone_and_attach_lora(r);
    std::vector<std::unique_ptr<LossTerm>> terms;
    terms.push_back(std::make_unique<ProcessRewardTerm>());
    trainer_ = std::make_unique<Trainer>(r.policy.model(), std::move(terms), offline_trainer_options(cfg_), r.reducer);
    // Every solution's tokenization checked up front, so a bad record fails before the first step.
    check(!train_.empty(), "process data: no training solutions");
    const std::string& delimiter = cfg_.process.data.delimiter;
    const bool add_special = cfg_.rl.add_special_tokens;
    for (const StepExample& ex : train_) process_input(*r.policy.tokenizer, ex, delimiter, add_special);
    source_ = std::make_unique<DatasetSource>(
        train_.size(), cfg_.process.batch_size, derive_seed(cfg_.run.seed, SeedStream::ProcessOrder), shard_of(r.reducer),
        [this, &policy = r.policy, &delimiter, add_special](size_t index, int64_t position) {
          Episode e = process_episode(policy, train_[index], delimiter, add_special);
          e.group = position;
          return std::vector<Episode>{std::move(e)};
        });
    reducer_ = &r.reducer;
  }
  Trainer& trainer() override { return *trainer_; }
  std::vector<Episode> next(int64_t, int32_t, Json& m) override {
    auto eps = source_->next();
    double n = static_cast<double>(eps.size());
    reducer_->sum(std::span<double>(&n, 1));
    m["prm/solutions"] = n;
    return eps;
  }
  DataCursor& cursor() override { return source_->cursor(); }

  bool measures_pass1() const override { return false; }  // a reward model does not generate
  Json held_out_before(RunContext& r) override { return eval_.empty() ? Json(nullptr) : measure(r); }
  Json held_out_after(RunContext& r) override {
    if (eval_.empty()) return nullptr;
    Json after = measure(r);
    if (!mc_report_.is_null()) after["monte_carlo_labels"] = mc_report_;
    return after;
  }
  void fill_summary(TrainRunSummary& s) const override { s.process = true; }

  std::vector<std::pair<std::string, double>> progress(const Json& m) const override { return reward_model_progress(m); }
  std::vector<std::string> table_keys() const override { return {"loss/prm", "prm/accuracy", "time/step_s"}; }
  void print_held_out(const TrainRunSummary& s) const override {
    if (!s.preference_before.is_object() || !s.preference_after.is_object()) return;
    std::printf("held-out process reward model: step accuracy before %.3f  after %.3f; solutions judged right "
                "%.3f; first wrong step found %.3f\n",
                s.preference_before.value("step_accuracy", 0.0), s.preference_after.value("step_accuracy", 0.0),
                s.preference_after.value("solution_accuracy", 0.0), s.preference_after.value("first_error", 0.0));
  }

 private:
  Json measure(RunContext& r) {
    return measure_process_reward(*r.policy.model(), *r.policy.tokenizer, eval_, cfg_.process.data.delimiter,
                                  cfg_.rl.add_special_tokens, cfg_.trainer.micro_batch_size)
        .to_json();
  }

  // Math-Shepherd: the training solutions' step labels from the (warmed) policy's own rollouts; a resumed
  // run trains on the labels the run estimated when it started.
  void monte_carlo_labels(RunContext& r, bool resumed) {
    const std::filesystem::path mc_path = cfg_.run.out_dir / "monte_carlo_labels.json";
    if (resumed) {
      check(std::filesystem::exists(mc_path), mc_path.string(),
            " is missing: the run's Monte-Carlo step labels cannot be restored");
      const Json saved = read_json_file(mc_path.string());
      for (StepExample& e : train_) {
        check(saved.contains(e.id), mc_path.string(), " has no labels for ", e.where, " (the data changed?)");
        e.labels = saved.at(e.id).get<std::vector<double>>();
      }
      return;
    }
    check(!r.policy.model()->config().is_classifier(), cfg_.source, ": process.labels = \"monte_carlo\" samples "
          "rollouts from the model, and ", cfg_.model_path().string(), " is a classifier; start from a causal LM");
    EvalOptions eo;
    eo.n_samples = cfg_.process.mc_rollouts;
    eo.temperature = cfg_.process.mc_temperature;
    eo.max_new_tokens = cfg_.rl.sampling.max_new_tokens;
    eo.stop = cfg_.rl.sampling.stop_strings;
    eo.accuracy_reward = cfg_.rl.accuracy_reward;
    eo.add_special_tokens = cfg_.rl.add_special_tokens;
    eo.max_batch_rows = cfg_.rl.max_batch_rows;
    eo.seed = derive_seed(cfg_.run.seed, SeedStream::ProcessEval);
    const MonteCarloReport rep = monte_carlo_step_labels(r.policy, train_, r.rewards, cfg_.process.data.delimiter, eo);
    mc_report_ = rep.to_json();
    r.say("process: Monte-Carlo step labels " + mc_report_.dump());
    if (r.writer()) {
      Json saved = Json::object();
      for (const StepExample& e : train_) saved[e.id] = e.labels;
      ensure_directory(cfg_.run.out_dir);
      write_file_atomic(mc_path, saved.dump());
    }
  }

  const TrainConfig& cfg_;
  std::unique_ptr<StepDataset> data_;
  std::vector<StepExample> train_, eval_;  // the solutions that fit the context
  Json mc_report_;
  Reducer* reducer_ = nullptr;
  std::unique_ptr<Trainer> trainer_;
  std::unique_ptr<DatasetSource> source_;
};

}  // namespace

std::unique_ptr<RunKind> make_process_kind(const TrainConfig& cfg) { return std::make_unique<ProcessKind>(cfg); }

}  // namespace rlf

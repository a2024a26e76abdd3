// The reward-model kind of run on preference pairs (trainer.kind = "rm" with
// [preference.data]): a Bradley-Terry head (rm term), or one output per
// reward_model.attributes trained on the pairs' ratings (rm_rating term) and,
// with reward_model.gating, ArmoRM's gating layer fitted after the last step.
#include "train/run_kind_reward_model.h"

#include <chrono>
#include <cstdio>

#include "rm/gating.h"
#include "rm/reward_model.h"
#include "train/loss_terms.h"
#include "train/run_kind.h"
#include "train/run_kind_preference.h"
#include "util/clock.h"
#include "util/error.h"
#include "util/seed.h"

namespace rlf {

void add_score_head(RunContext& r, const std::vector<std::string>& attributes, bool warmed) {
  const TrainConfig& cfg = r.cfg;
  const int64_t n_heads = attributes.empty() ? 1 : static_cast<int64_t>(attributes.size());
  if (!r.policy.model()->config().is_classifier()) {
    CausalLM lm = r.policy.model();
    r.policy.loaded.model = make_reward_model(*lm, n_heads, derive_seed(cfg.run.seed, SeedStream::RewardHeadInit), attributes);
    r.policy.loaded.config = r.policy.model()->config();
    r.say("reward model: " + r.policy.model()->config().architecture + " on the " +
          (warmed ? "warmed" : "loaded") + " backbone, score head of " + std::to_string(n_heads) + " output(s)" +
          (attributes.empty() ? std::string() : " " + Json(attributes).dump()));
  }
  check(r.policy.model()->config().num_labels == n_heads, cfg.model_path().string(), ": the classifier has ",
        r.policy.model()->config().num_labels, " outputs but the run trains ", n_heads,
        attributes.empty() ? std::string(" (one Bradley-Terry head)") : " (reward_model.attributes)");
}

void freeze_backbone_and_attach_lora(RunContext& r) {
  if (!r.cfg.reward_model.train_backbone)
    for (auto& p : r.policy.model()->named_parameters())
      if (p.key() != "score.weight") p.value().set_requires_grad(false);
  if (r.cfg.lora.enabled) r.attach_lora();
}

std::vector<std::pair<std::string, double>> reward_model_progress(const Json& m) {
  return {{"loss", m.value("loss/rm", m.value("loss/prm", m.value("loss/rm_rating", 0.0)))},
          {"acc", m.value("rm/accuracy", m.value("prm/accuracy", 0.0))}};
}

namespace {

// ArmoRM's second stage: the gating layer over the prompt's features, fitted
// on the training pairs with the trained backbone and heads frozen.
RewardGating fit_reward_gating(RunContext& r, const std::vector<PreferenceExample>& pairs, const GatingOptions& options,
                               Json* report) {
  const auto t0 = std::chrono::steady_clock::now();
  CausalLMImpl& model = *r.policy.model();
  std::vector<RewardModelInput> inputs;
  for (const PreferenceExample& p : pairs) {
    inputs.push_back(reward_model_input(*r.policy.tokenizer, p.prompt, p.chosen, r.cfg.rl.add_special_tokens));
    inputs.push_back(reward_model_input(*r.policy.tokenizer, p.prompt, p.rejected, r.cfg.rl.add_special_tokens));
  }
  std::vector<std::vector<int32_t>> seqs;
  std::vector<int64_t> ctx;
  for (const RewardModelInput& in : inputs) seqs.push_back(in.tokens), ctx.push_back(std::max<int64_t>(1, in.prompt_tokens));
  torch::Tensor context;
  const bool was_training = model.is_training();
  model.eval();
  const auto scores = score_sequences(model, seqs, r.cfg.trainer.micro_batch_size, &ctx, &context);
  if (was_training) model.train();
  const auto P = static_cast<int64_t>(pairs.size()), K = model.config().num_labels;
  auto c = torch::empty({P, K}, torch::kFloat32), rej = torch::empty({P, K}, torch::kFloat32);
  for (int64_t i = 0; i < P; ++i)
    for (int64_t k = 0; k < K; ++k)
      c[i][k] = scores[static_cast<size_t>(2 * i)][static_cast<size_t>(k)],
      rej[i][k] = scores[static_cast<size_t>(2 * i + 1)][static_cast<size_t>(k)];
  std::vector<std::string> names;
  for (int64_t k = 0; k < K; ++k) names.push_back(model.config().label_name(k));
  RewardGating g(model.config().hidden_size, names, options);
  // The chosen and rejected responses share the prompt: its features are the chosen row's.
  const auto idx = torch::arange(0, 2 * P, 2, torch::kInt64);
  const GatingFit fit = g.fit(context.index_select(0, idx), c, rej);
  *report = {{"pairs", fit.pairs},           {"loss_before", fit.loss_before},
             {"loss_after", fit.loss_after}, {"accuracy_before", fit.accuracy_before},
             {"accuracy_after", fit.accuracy_after}, {"seconds", seconds_since(t0)}};
  r.say("gating: fitted on " + std::to_string(fit.pairs) + " training pairs: " + report->dump());
  return g;
}

class RewardModelKind final : public RunKind {
 public:
  explicit RewardModelKind(const TrainConfig& cfg) : cfg_(cfg), attributes_(cfg.reward_model.attributes) {
    // A multi-objective model without a gating layer is read as the mean of its attributes.
    const auto n = attributes_.size();
    if (n > 1) readout_.direction.assign(n, 1.0 / static_cast<double>(n));
  }
  const char* name() const override { return "rm"; }
  void load_data(RunContext& r) override { pairs_ = load_preference_pairs(r); }
  void prepare(RunContext&) override {}  // LoRA goes on once the score head is (start)
  bool needs_reference() const override { return cfg_.rl.kl_beta > 0; }

  void start(RunContext& r, CausalLM, bool warmed, bool) override {
    add_score_head(r, attributes_, warmed);
    if (!attributes_.empty()) {
      int64_t rated = 0;
      for (const PreferenceExample& p : pairs_.train)
        for (const std::string& a : attributes_) rated += p.chosen_ratings.count(a) + p.rejected_ratings.count(a);
      check(rated > 0, cfg_.source, ": reward_model.attributes = ", Json(attributes_).dump(),
            " but no training pair rates any of them (records need chosen_ratings / rejected_ratings objects; preset "
            "arithmetic: rated = true)");
    }
    freeze_backbone_and_attach_lora(r);
    std::vector<std::unique_ptr<LossTerm>> terms;
    if (attributes_.empty()) terms.push_back(std::make_unique<RewardModelTerm>(cfg_.reward_model.margin));
    else terms.push_back(std::make_unique<RatingTerm>());
    trainer_ = std::make_unique<Trainer>(r.policy.model(), std::move(terms), offline_trainer_options(cfg_), r.reducer);
    source_ = std::make_unique<PreferenceSource>(r, pairs_.train, CausalLM{nullptr}, attributes_);
  }
  Trainer& trainer() override { return *trainer_; }
  std::vector<Episode> next(int64_t, int32_t, Json& m) override { return source_->next(m); }
  DataCursor& cursor() override { return source_->cursor(); }

  bool measures_pass1() const override { return false; }  // a reward model does not generate
  Json held_out_before(RunContext& r) override { return pairs_.eval.empty() ? Json(nullptr) : measure(r); }
  void finish_steps(RunContext& r, const std::optional<std::filesystem::path>& resume_from, bool resumed_done) override {
    if (!cfg_.reward_model.gating) return;
    if (resumed_done) {
      auto g = RewardGating::load(*resume_from / "model");
      check(g.has_value(), resume_from->string(), ": the finished run's model has no ", kGatingFile);
      gating_ = std::make_shared<RewardGating>(std::move(*g));
    } else {
      gating_ = std::make_shared<RewardGating>(
          fit_reward_gating(r, pairs_.train, cfg_.reward_model.gating_options, &gating_fit_));
    }
  }
  // ArmoRM's gating layer, fitted after the last step, travels with the model it weighs.
  void save_model_extras(const std::filesystem::path& model_dir) const override {
    if (gating_) gating_->save(model_dir);
  }
  Json held_out_after(RunContext& r) override {
    if (pairs_.eval.empty()) return nullptr;
    if (!gating_) return measure(r);
    Json ungated = measure(r);
    readout_ = RewardReadout{};
    readout_.gating = gating_;
    Json after = measure(r);
    after["ungated"] = ungated;
    if (!gating_fit_.is_null()) after["gating_fit"] = gating_fit_;
    return after;
  }

  std::vector<std::pair<std::string, double>> progress(const Json& m) const override { return reward_model_progress(m); }
  std::vector<std::string> table_keys() const override {
    if (!attributes_.empty()) return {"loss/rm_rating", "rm/rating_mse", "time/step_s"};
    return {"loss/rm", "rm/accuracy", "rm/margin", "time/step_s"};
  }
  void print_held_out(const TrainRunSummary& s) const override {
    if (!s.preference_before.is_object() || !s.preference_after.is_object()) return;
    std::printf("held-out pairwise accuracy of the reward model: before %.3f  after %.3f (margin %.3f, ECE %.3f)\n",
                s.preference_before.value("accuracy", 0.0), s.preference_after.value("accuracy", 0.0),
                s.preference_after.value("margin", 0.0), s.preference_after.value("ece", 0.0));
  }

 private:
  Json measure(RunContext& r) {
    return measure_reward_model(*r.policy.model(), *r.policy.tokenizer, pairs_.eval, cfg_.rl.add_special_tokens,
                                cfg_.trainer.micro_batch_size, readout_)
        .to_json();
  }

  const TrainConfig& cfg_;
  const std::vector<std::string>& attributes_;
  PreferencePairs pairs_;
  RewardReadout readout_;
  std::shared_ptr<RewardGating> gating_;
  Json gating_fit_;
  std::unique_ptr<Trainer> trainer_;
  std::unique_ptr<PreferenceSource> source_;
};

}  // namespace

std::unique_ptr<RunKind> make_reward_model_kind(const TrainConfig& cfg) { return std::make_unique<RewardModelKind>(cfg); }

}  // namespace rlf

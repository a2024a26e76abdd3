#include "train/run_kind_preference.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <set>

#include "train/fitting_records.h"
#include "train/loss_terms.h"
#include "train/preference_steps.h"
#include "train/run_kind.h"
#include "util/error.h"
#include "util/seed.h"

namespace rlf {

namespace {

// Preference pairs whose prompt + response + EOS exceeds the context are bad
// records: an error naming the record, or (preference.data.on_bad_record =
// "skip") dropped and counted.
std::vector<PreferenceExample> fitting_pairs(const std::vector<PreferenceExample>& in, RunContext& r, int64_t* n_dropped) {
  const int64_t limit = r.policy.model()->config().max_position_embeddings;
  auto prompt = [&](const PreferenceExample& p) {
    return static_cast<int64_t>(r.policy.tokenizer->encode(p.prompt, r.cfg.rl.add_special_tokens).size());
  };
  auto longest = [&](const PreferenceExample& p) {
    return static_cast<int64_t>(std::max(r.policy.tokenizer->encode(p.chosen, false).size(),
                                         r.policy.tokenizer->encode(p.rejected, false).size()));
  };
  return fitting_records(
      in, limit, r.cfg.preference.data.on_bad_record == "skip", *n_dropped,
      [&](const PreferenceExample& p) { return prompt(p) + longest(p) + 1; },
      [&](const PreferenceExample& p, int64_t) {
        return str(p.where, ": the prompt (", prompt(p), " tokens) and its longer response (", longest(p),
                   " tokens) do not fit the model's context of ", limit,
                   " tokens (shorten them, or set preference.data.on_bad_record = \"skip\")");
      });
}

}  // namespace

PreferencePairs load_preference_pairs(RunContext& r) {
  const TrainConfig& cfg = r.cfg;
  PreferencePairs p;
  p.data = std::make_unique<PreferenceDataset>(PreferenceDataset::load(cfg.preference.data, &r.chat));
  // Held-out prompts stay held out: pairs whose prompt is a held-out eval prompt are dropped.
  std::set<std::string> held_out;
  for (const PromptExample& e : r.eval) held_out.insert(e.prompt);
  int64_t n_long = 0, n_held_out = 0;
  for (const PreferenceExample& x : fitting_pairs(p.data->train(), r, &n_long)) {
    if (held_out.count(x.prompt)) ++n_held_out;
    else p.train.push_back(x);
  }
  p.eval = fitting_pairs(p.data->eval(), r, &n_long);
  check(!p.train.empty(), cfg.source, ": [preference.data] has no training pairs outside the held-out eval prompts");
  r.say(p.data->summary() + "; " + std::to_string(n_held_out) +
        " training pairs dropped because their prompt is a held-out eval prompt" +
        (n_long ? "; " + std::to_string(n_long) + " pairs too long for the context skipped" : ""));
  return p;
}

PreferenceSource::PreferenceSource(RunContext& r, const std::vector<PreferenceExample>& pairs, CausalLM reference,
                                   std::vector<std::string> attributes)
    : reducer_(r.reducer) {
  check(!pairs.empty(), "preference data: no training pairs");
  const bool add_special = r.cfg.rl.add_special_tokens;
  if (!reference.is_empty()) {
    const auto t0 = std::chrono::steady_clock::now();
    ref_logprobs_ = preference_reference_logprobs(r.policy, pairs, add_special, *reference, r.cfg.trainer.micro_batch_size);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (s > 0)
      r.say("preference: reference log-probs of " + std::to_string(pairs.size()) + " training pairs in " +
            std::to_string(s) + " s");
  }
  source_ = std::make_unique<DatasetSource>(
      pairs.size(), r.cfg.preference.batch_size, derive_seed(r.cfg.run.seed, SeedStream::PreferenceOrder), shard_of(r.reducer),
      [this, &policy = r.policy, &pairs, add_special, attributes = std::move(attributes)](size_t index, int64_t position) {
        auto pair = preference_episodes(policy, pairs[index], add_special, position, attributes);
        if (!ref_logprobs_.empty()) {
          pair[0].ref_logprob = ref_logprobs_[2 * index];
          pair[1].ref_logprob = ref_logprobs_[2 * index + 1];
        }
        return pair;
      });
}

std::vector<Episode> PreferenceSource::next(Json& m) {
  auto eps = source_->next();
  double pairs = static_cast<double>(eps.size() / 2);
  reducer_.sum(std::span<double>(&pairs, 1));
  m["pref/pairs"] = pairs;
  return eps;
}

namespace {

class PreferenceKind final : public RunKind {
 public:
  explicit PreferenceKind(const TrainConfig& cfg) : cfg_(cfg) {}
  const char* name() const override { return "dpo"; }
  void load_data(RunContext& r) override { pairs_ = load_preference_pairs(r); }
  void prepare(RunContext& r) override { attach_lora_to_lm(r); }
  bool needs_reference() const override { return cfg_.rl.kl_beta > 0 || !cfg_.preference.loss.reference_free(); }

  void start(RunContext& r, CausalLM reference, bool, bool) override {
    std::vector<std::unique_ptr<LossTerm>> terms;
    terms.push_back(std::make_unique<PreferenceTerm>(cfg_.preference.loss));
    trainer_ = std::make_unique<Trainer>(r.policy.model(), std::move(terms), offline_trainer_options(cfg_), r.reducer);
    reference_ = reference;
    source_ = std::make_unique<PreferenceSource>(r, pairs_.train, reference);
  }
  Trainer& trainer() override { return *trainer_; }
  std::vector<Episode> next(int64_t, int32_t, Json& m) override { return source_->next(m); }
  DataCursor& cursor() override { return source_->cursor(); }

  // Held-out pairs: the implicit-reward accuracy the loss optimises and the policy's own preference.
  Json held_out_before(RunContext& r) override { return measure(r); }
  Json held_out_after(RunContext& r) override { return measure(r); }

  std::vector<std::pair<std::string, double>> progress(const Json& m) const override {
    return {{"loss", m.value("loss/pref", 0.0)}, {"acc", m.value("pref/accuracy", 0.0)}};
  }
  std::vector<std::string> table_keys() const override {
    return {"loss/pref", "pref/accuracy", "pref/margin", "pref/chosen_logp", "pref/rejected_logp", "time/step_s"};
  }
  void print_held_out(const TrainRunSummary& s) const override {
    if (!s.preference_before.is_object() || !s.preference_after.is_object()) return;
    std::printf("held-out preference accuracy (implicit reward): before %.3f  after %.3f; the policy's own "
                "(mean log-prob per token): before %.3f  after %.3f\n",
                s.preference_before.value("accuracy", 0.0), s.preference_after.value("accuracy", 0.0),
                s.preference_before.value("logp_accuracy", 0.0), s.preference_after.value("logp_accuracy", 0.0));
  }

 private:
  Json measure(RunContext& r) {
    if (pairs_.eval.empty()) return nullptr;
    return measure_preferences(r.policy, *r.policy.model(), reference_.is_empty() ? nullptr : reference_.get(),
                               pairs_.eval, cfg_.preference.loss, cfg_.rl.add_special_tokens,
                               cfg_.trainer.micro_batch_size)
        .to_json();
  }

  const TrainConfig& cfg_;
  PreferencePairs pairs_;
  CausalLM reference_{nullptr};
  std::unique_ptr<Trainer> trainer_;
  std::unique_ptr<PreferenceSource> source_;
};

}  // namespace

std::unique_ptr<RunKind> make_preference_kind(const TrainConfig& cfg) { return std::make_unique<PreferenceKind>(cfg); }

}  // namespace rlf

#include "train/run_kind_sft.h"

#include "train/loss_terms.h"
#include "train/micro_batch.h"
#include "train/run_kind.h"
#include "train/sft_steps.h"
#include "util/seed.h"

namespace rlf {

SftSource::SftSource(RunContext& r, int64_t batch_size, uint64_t seed, bool one_group, CausalLM reference,
                     int64_t micro_batch_size)
    : reducer_(r.reducer),
      source_(r.sft_examples.size(), batch_size, seed, shard_of(r.reducer),
              [&policy = r.policy, &examples = r.sft_examples, add_special = r.cfg.rl.add_special_tokens,
               one_group](size_t index, int64_t position) {
                Episode e = sft_episode(policy, examples[index], add_special);
                if (!one_group) e.group = position;
                return std::vector<Episode>{std::move(e)};
              }),
      reference_(std::move(reference)),
      micro_batch_size_(micro_batch_size) {}

std::vector<Episode> SftSource::next(Json& m) {
  auto eps = source_.next();
  double n = 0;
  for (const auto& e : eps) n += static_cast<double>(e.n_policy_tokens());
  reducer_.sum(std::span<double>(&n, 1));
  m["sft/tokens"] = n;
  if (reference_) {
    std::vector<const Episode*> view;
    for (const auto& e : eps) view.push_back(&e);
    auto ref = recompute_logprobs(*reference_, view, micro_batch_size_, LogprobScope::FromFirstWeighted);
    for (size_t i = 0; i < eps.size(); ++i) eps[i].ref_logprob = std::move(ref[i]);
  }
  return eps;
}

namespace {

class SftKind final : public RunKind {
 public:
  explicit SftKind(const TrainConfig& cfg) : cfg_(cfg) {}
  const char* name() const override { return "sft"; }
  bool warm_starts() const override { return false; }  // the run is the SFT
  void prepare(RunContext& r) override { attach_lora_to_lm(r); }
  bool needs_reference() const override { return cfg_.rl.kl_beta > 0; }

  void start(RunContext& r, CausalLM reference, bool, bool) override {
    TrainerOptions to = cfg_.trainer;
    to.micro_batch_size = cfg_.sft.micro_batch_size;
    to.log_entropy = cfg_.loss.entropy_coef != 0;
    to.log_rollout_agreement = false;  // SFT targets were not sampled: nothing to agree with
    // An SFT run may keep the policy near the model as loaded (the spine's reference), or its entropy up.
    std::vector<std::unique_ptr<LossTerm>> terms;
    terms.push_back(std::make_unique<CrossEntropyTerm>());
    if (cfg_.rl.kl_beta > 0)
      terms.push_back(std::make_unique<KlTerm>(cfg_.rl.kl_beta, cfg_.rl.kl_estimator, algo::AggregationOptions{}));
    if (cfg_.loss.entropy_coef != 0)
      terms.push_back(std::make_unique<EntropyTerm>(cfg_.loss.entropy_coef, algo::AggregationOptions{}));
    trainer_ = std::make_unique<Trainer>(r.policy.model(), std::move(terms), to, r.reducer);
    source_ = std::make_unique<SftSource>(r, cfg_.sft.batch_size, derive_seed(cfg_.run.seed, SeedStream::SftOrder), /*one_group=*/false,
                                          reference, cfg_.sft.micro_batch_size);
  }
  Trainer& trainer() override { return *trainer_; }

  std::vector<Episode> next(int64_t, int32_t, Json& m) override { return source_->next(m); }
  DataCursor& cursor() override { return source_->cursor(); }

  std::vector<std::pair<std::string, double>> progress(const Json& m) const override {
    return {{"loss", m.value("loss/ce", 0.0)}};
  }
  std::vector<std::string> table_keys() const override { return {"loss/ce", "time/step_s"}; }

 private:
  const TrainConfig& cfg_;
  std::unique_ptr<Trainer> trainer_;
  std::unique_ptr<SftSource> source_;
};

}  // namespace

std::unique_ptr<RunKind> make_sft_kind(const TrainConfig& cfg) { return std::make_unique<SftKind>(cfg); }

}  // namespace rlf

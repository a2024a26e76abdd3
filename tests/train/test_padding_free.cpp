// Padding-free micro-batches (trainer.padding_free, train/micro_batch.h
// forward_for_heads) and token budgets (trainer.micro_batch_tokens) against
// the padded grid: on episodes of very different lengths, every loss term
// (token- and sequence-level policy objectives, covariance-based ones, kl,
// entropy with its gradient, distillation, the group-whole preference term,
// a value head's term), their normalisers and metrics, and every
// parameter's gradient agree to 1e-5 in fp32, on the fast path and the
// module path, with micro-batches counted in sequences or in tokens; half
// the episodes carry sampling-mask replay's kept sets (of two widths).
#include <gtest/gtest.h>

#include <array>
#include <barrier>
#include <map>
#include <memory>
#include <thread>

#include "tests/support/tensors.h"
#include "tests/train/run_fixtures.h"
#include "train/loss_terms.h"
#include "env/episode_json.h"
#include "train/micro_batch.h"
#include "train/rank_balance.h"
#include "train/trainer.h"

namespace rlf {
namespace {

// Prompt `p` tokens, then a response of `r` tokens (loss weight 1).
Episode ragged_episode(int64_t group, int64_t p, int64_t r, uint32_t salt) {
  Episode e;
  e.group = group;
  const int64_t n = p + r;
  e.old_logprob.assign(static_cast<size_t>(n), 0.0f);
  for (int64_t t = 0; t < n; ++t) {
    e.tokens.push_back(static_cast<int32_t>((salt * 131 + 17 * t + t * t) % 500 + 5));
    const bool policy = t >= p;
    e.loss_weight.push_back(policy ? 1.0f : 0.0f);
    e.policy_version.push_back(policy ? 0 : -1);
    e.advantage.push_back(policy ? (salt % 3 == 0 ? 0.7f : -0.4f + 0.1f * static_cast<float>(salt % 5)) : 0.0f);
  }
  Segment prompt{.role = SegmentRole::Prompt, .begin = 0, .end = p};
  Segment turn{.role = SegmentRole::Policy, .begin = p, .end = n};
  e.segments = {prompt, turn};
  e.n_prompt = p;
  e.n_turns = 1;
  e.reward = static_cast<double>(salt % 4);
  return e;
}

// Groups of 3 with lengths from 3 to 40 tokens and prompts of 2 to 6 (or
// `lens`: {prompt, response} per episode, groups of 3 in order).
std::vector<Episode> ragged_episodes(CausalLM& policy, CausalLM& ref, CausalLM& teacher,
                                     std::vector<std::array<int64_t, 2>> lens = {{2, 3}, {2, 30}, {2, 8}, {6, 1}, {6, 34},
                                                                                 {6, 12}, {4, 20}, {4, 2}, {4, 9}}) {
  std::vector<Episode> eps;
  for (size_t i = 0; i < std::size(lens); ++i)
    eps.push_back(ragged_episode(static_cast<int64_t>(i / 3), lens[i][0], lens[i][1], static_cast<uint32_t>(i + 1)));
  // Sampling-mask replay on every other episode: kept sets of 3 or 4 ids (the token, two others, -1 fills).
  for (size_t i = 0; i < eps.size(); i += 2) {
    Episode& e = eps[i];
    const size_t k = 3 + i % 4 / 2, n = e.tokens.size();
    e.sampling_mask_id.assign(n * k, -1);
    for (size_t t = static_cast<size_t>(e.n_prompt); t < n; ++t)
      for (size_t j = 0; j < 3; ++j) e.sampling_mask_id[t * k + j] = j == 0 ? e.tokens[t] : (e.tokens[t] + static_cast<int32_t>(j * 11)) % 500;
  }
  for (auto& e : eps) {
    const std::vector<const Episode*> one{&e};
    e.old_logprob = recompute_logprobs(*policy, one, 1, LogprobScope::AllTokens, /*replay_mask=*/true)[0];
    // Old log-probs off the current ones by -0.04, 0.01 or 0.06, never 0: kl_cov's penalty |log pi - log pi_old|
    // has a kink at 0, where the two layouts' last-bit differences (which depend on how the CPU's threads split the
    // sums) would pick opposite gradients (measured: a 2e-2 difference on a Sapphire Rapids Xeon at 2 threads).
    for (size_t t = 0; t < e.old_logprob.size(); ++t) e.old_logprob[t] += 0.05f * static_cast<float>(t % 3) - 0.04f;
    e.ref_logprob = recompute_logprobs(*ref, one, 1)[0];
    e.teacher_logprob = recompute_logprobs(*teacher, one, 1)[0];
    e.value.assign(e.tokens.size(), 0.1f);
    e.value_target.assign(e.tokens.size(), 0.5f);
  }
  return eps;
}

// `per_micro_batch_statistics`: kl_cov, whose selection of tokens ranks
// them within a micro-batch (so it depends on which episodes share one,
// not on their layout).
std::vector<std::unique_ptr<LossTerm>> every_term(bool per_micro_batch_statistics) {
  const algo::AggregationOptions tok, seq{.mode = algo::LossAggregation::SeqMeanTokenMean, .max_tokens = 0};
  std::vector<std::unique_ptr<LossTerm>> terms;
  terms.push_back(std::make_unique<PolicyGradientTerm>(algo::PolicyLossOptions{}, tok));
  algo::PolicyLossOptions gspo;
  gspo.ratio_level = algo::RatioLevel::Sequence;
  terms.push_back(std::make_unique<PolicyGradientTerm>(gspo, seq));
  if (per_micro_batch_statistics) {
    algo::PolicyLossOptions cov;
    cov.objective = algo::PolicyObjective::KlCov;
    terms.push_back(std::make_unique<PolicyGradientTerm>(cov, tok));
  }
  terms.push_back(std::make_unique<KlTerm>(0.3, algo::KlEstimator::K3, tok));
  terms.push_back(std::make_unique<EntropyTerm>(0.05, seq));
  terms.push_back(std::make_unique<DistillTerm>(0.2, algo::KlEstimator::K1, tok));
  terms.push_back(std::make_unique<PreferenceTerm>(algo::PreferenceLossOptions{}));
  terms.push_back(std::make_unique<ValueTerm>(0.2, 0, 0.5));
  return terms;
}

struct StepResult {
  StepLoss loss;
  std::map<std::string, torch::Tensor> grads;
  int64_t micro_batches = 0;
};

StepResult step(CausalLM& policy, const std::vector<Episode>& eps, LeverMode padding_free, int64_t micro_tokens,
                bool kl_cov = true) {
  MemoryLevers levers;
  levers.logprob_recompute = LeverMode::Off;
  levers.checkpoint = CheckpointMode::None;
  levers.padding_free = padding_free;
  policy->set_memory_levers(levers);
  LocalReducer reducer;
  TrainerOptions to;
  to.micro_batch_size = 4;
  to.micro_batch_tokens = micro_tokens;
  Trainer trainer(policy, every_term(kl_cov), to, reducer);
  std::vector<const Episode*> view;
  for (const auto& e : eps) view.push_back(&e);
  policy->zero_grad();
  StepResult r;
  r.loss = trainer.accumulate(view);
  for (const auto& p : policy->named_parameters())
    if (p.value().grad().defined()) r.grads[p.key()] = p.value().grad().clone();
  r.micro_batches = static_cast<int64_t>(split_micro_batches_by_group(view, 4, micro_tokens).size());
  return r;
}

// `tol`: relative to max(1, |value|); 1e-5 for the same micro-batches laid
// out either way. The two layouts give the matrix products other shapes, so
// fp32 sums run in another order, and on some CPUs the order also follows the
// buffers' alignment from run to run: value/mean (about 0.38) differed by
// 1.6e-6 in one run of five on an AMD EPYC (AVX2), 2026-11-29.
void expect_same_step(const StepResult& a, const StepResult& b, const std::string& what, double tol = 1e-5) {
  auto near = [&](double x, double y, const std::string& name) {
    EXPECT_NEAR(x, y, tol * std::max(1.0, std::abs(y))) << what << ": " << name;
  };
  ASSERT_TRUE(a.loss.finite && b.loss.finite) << what;
  near(a.loss.loss, b.loss.loss, "loss");
  near(a.loss.n_tokens, b.loss.n_tokens, "n_tokens");
  near(a.loss.logprob_diff_max, b.loss.logprob_diff_max, "logprob_diff_max");
  near(a.loss.kl_ref_sum, b.loss.kl_ref_sum, "kl_ref_sum");
  near(a.loss.entropy_sum, b.loss.entropy_sum, "entropy_sum");
  ASSERT_EQ(a.loss.term_loss.size(), b.loss.term_loss.size()) << what;
  for (const auto& [k, v] : b.loss.term_loss) near(a.loss.term_loss.at(k), v, k);
  ASSERT_EQ(a.loss.sums.size(), b.loss.sums.size()) << what;
  for (const auto& [k, v] : b.loss.sums) {
    // A count of tokens whose clipped and unclipped value losses differ:
    // where the clip does not bind they are equal but for the last bit of
    // old + (v - old), so a token may count on one side and not the other.
    if (k == "value/clipfrac") EXPECT_NEAR(a.loss.sums.at(k), v, 1.0) << what << ": " << k;
    else near(a.loss.sums.at(k), v, k);
  }
  for (const auto& [k, v] : b.loss.weight_total) near(a.loss.weight_total.at(k), v, "weight_total " + k);
  ASSERT_EQ(a.grads.size(), b.grads.size()) << what;
  for (const auto& [name, g] : b.grads) {
    const double scale = std::max(1.0, g.abs().max().item<double>());
    EXPECT_LE(test::max_diff(a.grads.at(name), g), tol * scale) << what << ": " << name;
  }
}

TEST(PaddingFree, EveryTermMetricAndGradientMatchesThePaddedGrid) {
  for (bool fast : {true, false}) {
    CausalLM policy = test::tiny_random_model(11), ref = test::tiny_random_model(12);
    CausalLM teacher = test::tiny_random_model(13);
    policy->add_value_head();
    {
      torch::NoGradGuard ng;
      policy->v_head->weight.normal_(0.0, 0.05);  // values that depend on the hidden states
    }
    policy->set_fast_cpu_path(fast);
    const std::vector<Episode> eps = ragged_episodes(policy, ref, teacher);
    const std::string path = fast ? "fast path" : "module path";
    const StepResult padded = step(policy, eps, LeverMode::Off, 0);
    EXPECT_GT(padded.loss.term_loss.at("loss/pref"), 0.0);
    EXPECT_NE(padded.loss.term_loss.at("loss/value"), 0.0);
    EXPECT_GT(padded.grads.size(), 5u);
    expect_same_step(step(policy, eps, LeverMode::On, 0), padded, path + ", 4 sequences per micro-batch");
    // A token budget changes which episodes share a micro-batch, not the step
    // (but for kl_cov's ranking within a micro-batch).
    const StepResult plain = step(policy, eps, LeverMode::Off, 0, false);
    const StepResult budget = step(policy, eps, LeverMode::On, 90, false);
    EXPECT_NE(budget.micro_batches, plain.micro_batches);
    // Other micro-batches sum in another order (pref/margin is a difference of
    // two sums of about 200 in magnitude): the same 1e-5.
    expect_same_step(budget, plain, path + ", 90 tokens per micro-batch");
    expect_same_step(step(policy, eps, LeverMode::Off, 90, false), plain, path + ", 90 tokens, padded");
  }
}

// The reference and old-log-prob passes (recompute_logprobs) and a
// critic's values (recompute_values) padding-free: the padded grid's values.
TEST(PaddingFree, RecomputedLogprobsAndValuesMatchThePaddedGrid) {
  CausalLM policy = test::tiny_random_model(21), ref = test::tiny_random_model(22);
  policy->add_value_head();
  {
    torch::NoGradGuard ng;
    policy->v_head->weight.normal_(0.0, 0.05);
  }
  const std::vector<Episode> eps = ragged_episodes(policy, ref, ref);
  std::vector<const Episode*> view;
  for (const auto& e : eps) view.push_back(&e);
  MemoryLevers levers;
  auto pass = [&](LeverMode mode, LogprobScope scope) {
    levers.padding_free = mode;
    policy->set_memory_levers(levers);
    return std::make_pair(recompute_logprobs(*policy, view, 4, scope), recompute_values(*policy, view, 4));
  };
  for (LogprobScope scope : {LogprobScope::AllTokens, LogprobScope::FromFirstWeighted}) {
    const auto [lp_grid, v_grid] = pass(LeverMode::Off, scope);
    const auto [lp, v] = pass(LeverMode::On, scope);
    ASSERT_EQ(lp.size(), eps.size());
    for (size_t i = 0; i < eps.size(); ++i) {
      ASSERT_EQ(lp[i].size(), eps[i].tokens.size());
      for (size_t t = 0; t < lp[i].size(); ++t) {
        EXPECT_NEAR(lp[i][t], lp_grid[i][t], 1e-5) << "episode " << i << " token " << t;
        EXPECT_NEAR(v[i][t], v_grid[i][t], 1e-5) << "episode " << i << " token " << t;  // as the step test
      }
    }
  }
}

// The token budget: episodes sorted by length join a micro-batch while their
// positions fit; one longer than the budget is alone; groups stay whole.
TEST(PaddingFree, TokenBudgetSplitsBySummedPositions) {
  std::vector<Episode> eps;
  const int64_t lens[] = {11, 3, 5, 30, 4, 9};
  for (size_t i = 0; i < std::size(lens); ++i) eps.push_back(ragged_episode(static_cast<int64_t>(i / 2), 1, lens[i] - 1,
                                                                            static_cast<uint32_t>(i)));
  std::vector<const Episode*> view;
  for (const auto& e : eps) view.push_back(&e);
  // Positions (tokens - 1): 10, 2, 4, 29, 3, 8; sorted 2, 3, 4, 8, 10, 29.
  const auto parts = split_micro_batches(view, 1, 12);
  std::vector<std::vector<size_t>> sizes;
  for (const auto& p : parts) {
    sizes.emplace_back();
    for (const Episode* e : p) sizes.back().push_back(e->tokens.size() - 1);
  }
  EXPECT_EQ(sizes, (std::vector<std::vector<size_t>>{{2, 3, 4}, {8}, {10}, {29}}));
  // Whole groups ({10, 2}, {4, 29}, {3, 8}) by their longest episode: {3, 8} and {10, 2} fit 24 together.
  const auto groups = split_micro_batches_by_group(view, 1, 24);
  ASSERT_EQ(groups.size(), 2u);
  EXPECT_EQ(groups[0].size(), 4u);  // {3, 8} then {10, 2}: 23 positions
  EXPECT_EQ(groups[1].size(), 2u);  // {4, 29}: alone, over the budget
  EXPECT_THROW(split_micro_batches(view, 1, -1), Error);
}

// Whole groups to ranks by tokens, largest first to the lightest rank: every
// group once, the same split for the same loads, no rank more than the
// largest group above the mean.
TEST(RankBalance, GroupsGoWholeToTheLightestRankLargestFirst) {
  const std::vector<GroupLoad> g = {{.slot = 4, .tokens = 30}, {.slot = 0, .tokens = 100}, {.slot = 1, .tokens = 90},
                                    {.slot = 2, .tokens = 50}, {.slot = 3, .tokens = 40}, {.slot = 5, .tokens = 10}};
  // 100 -> 0; 90 -> 1; 50 -> 1 (90); 40 -> 0 (100 < 140); 30 -> 0 (140 = 140: the lower rank); 10 -> 1.
  EXPECT_EQ(assign_groups_to_ranks(g, 2), (std::vector<int64_t>{0, 0, 1, 1, 0, 1}));
  EXPECT_EQ(assign_groups_to_ranks(g, 1), std::vector<int64_t>(6, 0));
  const auto three = assign_groups_to_ranks(g, 3);
  std::vector<int64_t> load(3, 0);
  for (size_t i = 0; i < g.size(); ++i) load[static_cast<size_t>(three[i])] += g[i].tokens;
  EXPECT_LE(*std::max_element(load.begin(), load.end()), 320 / 3 + 100);
  EXPECT_THROW(assign_groups_to_ranks(g, 0), Error);
}

// An episode through the ranks' exchange (CBOR of episode_to_json) comes
// back with every stream and scalar the trainer reads, bit for bit.
TEST(RankBalance, EpisodesCrossBetweenRanksExactly) {
  CausalLM policy = test::tiny_random_model(31), ref = test::tiny_random_model(32);
  std::vector<Episode> eps = ragged_episodes(policy, ref, ref);
  eps[1].value_target[3] = std::nanf("");
  eps[1].reward.reset(), eps[2].correct = true, eps[2].group_accuracy = 0.25, eps[2].ratings = {0.5f, std::nanf("")};
  eps[2].on_policy = false, eps[2].source = EpisodeSource::Replay;
  LocalReducer one;
  const std::vector<Episode> back = gather_episodes(eps, one);
  ASSERT_EQ(back.size(), eps.size());
  for (size_t i = 0; i < eps.size(); ++i) {
    EXPECT_EQ(episode_to_json(back[i]).dump(), episode_to_json(eps[i]).dump()) << "episode " << i;
    EXPECT_EQ(back[i].group, eps[i].group);
    EXPECT_EQ(back[i].reward, eps[i].reward);
    EXPECT_EQ(back[i].old_logprob, eps[i].old_logprob);  // floats exactly
    EXPECT_EQ(back[i].sampling_mask_id, eps[i].sampling_mask_id);
  }
  EXPECT_EQ(back[2].correct, std::optional<bool>(true));
  EXPECT_EQ(back[2].source, EpisodeSource::Replay);
  EXPECT_FALSE(back[2].on_policy);
  EXPECT_TRUE(std::isnan(back[1].value_target[3]));
}

// Ranks that are threads of one process, for the trainer's collectives.
struct ThreadRanks {
  explicit ThreadRanks(int64_t n) : world(n), sync(n), values(n), strings(n), grads(n) {}
  int64_t world;
  std::barrier<> sync;
  std::vector<std::vector<double>> values;
  std::vector<std::string> strings;
  std::vector<std::vector<torch::Tensor>> grads;
};

class ThreadReducer final : public Reducer {
 public:
  ThreadReducer(ThreadRanks& ranks, int64_t rank) : ranks_(ranks), rank_(rank) {}
  int64_t rank() const override { return rank_; }
  int64_t world_size() const override { return ranks_.world; }
  void sum(std::span<double> v) override { combine(v, [](double a, double b) { return a + b; }); }
  void max(std::span<double> v) override { combine(v, [](double a, double b) { return std::max(a, b); }); }
  std::vector<std::string> all_gather(const std::string& value) override {
    ranks_.strings[static_cast<size_t>(rank_)] = value;
    ranks_.sync.arrive_and_wait();
    std::vector<std::string> out = ranks_.strings;
    ranks_.sync.arrive_and_wait();
    return out;
  }
  void sum_gradients(const std::vector<torch::Tensor>& params) override {
    auto& mine = ranks_.grads[static_cast<size_t>(rank_)];
    mine.clear();
    for (const auto& p : params) mine.push_back(p.grad().defined() ? p.grad().clone() : torch::zeros_like(p));
    ranks_.sync.arrive_and_wait();
    for (size_t i = 0; i < params.size(); ++i) {
      torch::Tensor total = ranks_.grads[0][i].clone();
      for (size_t r = 1; r < ranks_.grads.size(); ++r) total += ranks_.grads[r][i];
      params[i].mutable_grad() = total;
    }
    ranks_.sync.arrive_and_wait();
  }

 private:
  template <class F>
  void combine(std::span<double> v, F f) {
    ranks_.values[static_cast<size_t>(rank_)].assign(v.begin(), v.end());
    ranks_.sync.arrive_and_wait();
    for (size_t i = 0; i < v.size(); ++i) {
      double x = ranks_.values[0][i];
      for (size_t r = 1; r < ranks_.values.size(); ++r) x = f(x, ranks_.values[r][i]);
      v[i] = x;
    }
    ranks_.sync.arrive_and_wait();
  }
  ThreadRanks& ranks_;
  int64_t rank_;
};

// Two ranks (threads) that rolled out groups of very different lengths:
// balanced, they split each mini-batch by tokens (dist/token_imbalance near
// 1, below the unbalanced split's), and either way they end with the weights
// one process trains on all the episodes (to float rounding).
TEST(RankBalance, TwoRanksTrainWhatOneProcessTrainsWithTheTokensSplitEvenly) {
  // Six groups: rank 0 holds groups 0, 2, 4 (long), rank 1 groups 1, 3, 5 (short).
  std::vector<std::array<int64_t, 2>> lens;
  for (int g = 0; g < 6; ++g)
    for (int i = 0; i < 3; ++i) lens.push_back({2 + i, g % 2 == 0 ? 24 + 4 * i + g : 2 + i + g / 2});
  CausalLM init = test::tiny_random_model(41), ref = test::tiny_random_model(42);
  init->add_value_head();
  {
    torch::NoGradGuard ng;
    init->v_head->weight.normal_(0.0, 0.05);
  }
  const torch::Tensor v_head = init->v_head->weight.detach().clone();
  auto policy = [&] {  // a copy of init (a fresh model of its seed and its value head)
    CausalLM m = test::tiny_random_model(41);
    m->add_value_head();
    torch::NoGradGuard ng;
    m->v_head->weight.copy_(v_head);
    return m;
  };
  const std::vector<Episode> eps = ragged_episodes(init, ref, ref, lens);
  TrainerOptions to;
  to.micro_batch_size = 4;
  to.mini_batches = 2;
  to.lr.lr = 1e-2;
  to.seed = 3;
  auto weights = [](CausalLM& m) {
    std::map<std::string, torch::Tensor> w;
    for (const auto& p : m->named_parameters()) w[p.key()] = p.value().detach().clone();
    return w;
  };
  CausalLM solo = policy();
  LocalReducer local;
  Trainer one(solo, every_term(false), to, local);
  one.update(eps, 0);
  const auto want = weights(solo);

  double imbalance[2] = {0, 0};
  for (bool balance : {false, true}) {
    SCOPED_TRACE(balance ? "balanced" : "each rank its own groups");
    ThreadRanks ranks(2);
    std::vector<std::map<std::string, torch::Tensor>> got(2);
    std::vector<Json> metrics(2);
    std::vector<CausalLM> models = {policy(), policy()};  // made here: model construction is not thread-safe
    auto rank_main = [&](int64_t r) {
      CausalLM m = models[static_cast<size_t>(r)];
      std::vector<Episode> mine;
      for (const Episode& e : eps)
        if (e.group % 2 == r) mine.push_back(e);
      ThreadReducer reducer(ranks, r);
      TrainerOptions o = to;
      o.balance_ranks = balance;
      Trainer t(m, every_term(false), o, reducer);
      metrics[static_cast<size_t>(r)] = t.update(mine, 0);
      got[static_cast<size_t>(r)] = weights(m);
    };
    std::thread a(rank_main, 0), b(rank_main, 1);
    a.join(), b.join();
    imbalance[balance] = metrics[0]["dist/token_imbalance"].get<double>();
    EXPECT_EQ(metrics[0]["dist/token_imbalance"], metrics[1]["dist/token_imbalance"]);
    for (const auto& [name, w] : want) {
      EXPECT_TRUE(torch::equal(got[0].at(name), got[1].at(name))) << name << ": the ranks agree bit for bit";
      EXPECT_LE(test::max_diff(got[0].at(name), w), 1e-5 * std::max(1.0, w.abs().max().item<double>())) << name;
    }
  }
  std::cout << "[ balance ] token imbalance (largest rank / mean): " << imbalance[0] << " unbalanced, "
            << imbalance[1] << " balanced\n";
  EXPECT_GT(imbalance[0], 1.5);
  EXPECT_LT(imbalance[1], imbalance[0]);
  EXPECT_LT(imbalance[1], 1.3);  // three groups per mini-batch: LPT gets 1.24 here
}

}  // namespace
}  // namespace rlf

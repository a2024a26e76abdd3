// Reward-hacking and collapse diagnostics (train/diagnostics.h) on groups
// worked out by hand: reward-length correlation, within-group reward std,
// zero-variance share, pass@G, distinct completions; non-rollout episodes
// and missing rewards left out; sums of two "ranks" equal one pass over all.
#include <gtest/gtest.h>

#include <cmath>

#include "train/diagnostics.h"
#include "util/double_fields.h"
#include "train/rejection_sampling.h"
#include "tests/support/test_env.h"

namespace rlf {
namespace {

// A group of single-turn episodes: (completion text, completion length, reward or none).
ScoredGroup group(const std::vector<std::tuple<std::string, int, std::optional<double>>>& eps) {
  ScoredGroup g;
  g.scores.names = {"correct"};
  g.scores.weights = {1.0};
  g.scores.results.resize(1);
  for (const auto& [text, len, reward] : eps) {
    Episode e = Episode::single_turn(0, {1, 2}, std::vector<int32_t>(static_cast<size_t>(len), 7),
                                     std::vector<float>(static_cast<size_t>(len), 0.0f));
    e.segments.back().text = text;
    g.group.episodes.push_back(e);
    RewardResult r;
    r.score = reward;
    g.scores.results[0].push_back(r);
    g.totals.push_back(reward);
  }
  return g;
}

TEST(Diagnostics, HandWorkedGroups) {
  std::vector<ScoredGroup> groups = {
      group({{"a", 2, 1.0}, {"b", 4, 0.0}, {"a", 2, 1.0}}),  // rewards 1,0,1: std sqrt(2/9); texts a,b,a: 2/3 distinct
      group({{"c", 6, 0.0}, {"d", 8, 0.0}}),                 // all equal: zero variance; no correct one
      group({{"e", 3, std::nullopt}, {"f", 5, 1.0}}),        // one rewarded episode: no std; judged, correct
  };
  // A refinement is not a sample of the policy: left out everywhere.
  groups[1].group.episodes.push_back(groups[1].group.episodes[0]);
  groups[1].group.episodes.back().source = EpisodeSource::Refinement;
  groups[1].scores.results[0].push_back(RewardResult{1.0, "", {}, ""});
  groups[1].totals.push_back(1.0);
  const Json m = diagnostics_from_sums(diagnostic_sums(groups, 0));
  // Rewarded rollout episodes: (1,2) (0,4) (1,2) (0,6) (0,8) (1,5).
  const std::vector<double> x = {1, 0, 1, 0, 0, 1}, y = {2, 4, 2, 6, 8, 5};
  double mx = 0, my = 0;
  for (size_t i = 0; i < 6; ++i) mx += x[i] / 6, my += y[i] / 6;
  double sxy = 0, sxx = 0, syy = 0;
  for (size_t i = 0; i < 6; ++i) sxy += (x[i] - mx) * (y[i] - my), sxx += (x[i] - mx) * (x[i] - mx), syy += (y[i] - my) * (y[i] - my);
  EXPECT_NEAR(m["diag/reward_length_corr"].get<double>(), sxy / std::sqrt(sxx * syy), 1e-12);
  EXPECT_NEAR(m["diag/group_reward_std"].get<double>(), (std::sqrt(2.0 / 9.0) + 0.0) / 2, 1e-12);
  EXPECT_DOUBLE_EQ(m["diag/zero_variance_frac"].get<double>(), 0.5);
  EXPECT_DOUBLE_EQ(m["diag/pass_at_group"].get<double>(), 2.0 / 3.0);
  EXPECT_NEAR(m["diag/distinct_frac"].get<double>(), (2.0 / 3.0 + 1.0 + 1.0) / 3, 1e-12);

  // Two ranks' sums added equal one pass over the union.
  DiagnosticSums a = diagnostic_sums({groups[0]}, 0), b = diagnostic_sums({groups[1], groups[2]}, 0);
  // (what Reducer::sum_fields does across ranks: field by field)
  over_fields(a, [&](std::span<double> av) { over_fields(b, [&](std::span<double> bv) {
    for (size_t i = 0; i < av.size(); ++i) av[i] += bv[i];
  }); });
  const Json two = diagnostics_from_sums(a);
  ASSERT_EQ(two.size(), m.size());
  for (const auto& [k, v] : m.items()) EXPECT_NEAR(two[k].get<double>(), v.get<double>(), 1e-12) << k;
}

TEST(Diagnostics, NoDataNoMetric) {
  EXPECT_TRUE(diagnostics_from_sums(diagnostic_sums({}, 0)).empty());
  // Constant rewards: the correlation is 0, not NaN.
  const Json m = diagnostics_from_sums(diagnostic_sums({group({{"a", 2, 1.0}, {"b", 5, 1.0}})}, 0));
  EXPECT_EQ(m["diag/reward_length_corr"].get<double>(), 0.0);
  EXPECT_EQ(m["diag/zero_variance_frac"].get<double>(), 1.0);
}

// The gold-reward watch: a warning once the proxy's mean over the last window
// rose and the gold's fell (both beyond the tolerance), at most once per window.
TEST(GoldRewardWatch, WarnsWhenTheProxyRisesWhileTheGoldFalls) {
  GoldRewardWatch watch("gold", 3, 0.02);
  int64_t step = 0;
  // Both rise together: no warning.
  for (double v : {0.1, 0.2, 0.3, 0.4, 0.5, 0.6}) EXPECT_FALSE(watch.add(++step, v, v));
  // The proxy keeps rising, the gold falls: a warning when a whole window shows it.
  EXPECT_FALSE(watch.add(++step, 0.7, 0.5));
  EXPECT_FALSE(watch.add(++step, 0.8, 0.4));
  auto w = watch.add(++step, 0.9, 0.3);
  ASSERT_TRUE(w.has_value());
  EXPECT_NE(w->find("gold reward 'gold' fell 0.500 -> 0.400"), std::string::npos) << *w;
  EXPECT_NE(w->find("rose 0.500 -> 0.800"), std::string::npos) << *w;
  // Not again within the next window, then again while it goes on.
  EXPECT_FALSE(watch.add(++step, 1.0, 0.2));
  EXPECT_FALSE(watch.add(++step, 1.1, 0.1));
  EXPECT_TRUE(watch.add(++step, 1.2, 0.0));
  // Changes within the tolerance are no change.
  GoldRewardWatch flat("gold", 2, 0.02);
  for (int i = 0; i < 8; ++i) EXPECT_FALSE(flat.add(i + 1, 0.5 + 0.001 * i, 0.5 - 0.001 * i));
}

// Rejection sampling keeps each group's best qualifying rollout episode (the
// first on ties), or every qualifying one; never a refinement, a missing
// reward or one below raft.min_reward.
TEST(RejectionSampling, KeepsTheBestOrEveryQualifyingRolloutEpisode) {
  std::vector<Episode> eps;
  auto add = [&](int64_t group, std::optional<double> reward, EpisodeSource source = EpisodeSource::Rollout) {
    Episode e = Episode::single_turn(group, {1, 2}, {3, 4}, {0.f, 0.f});
    e.reward = reward;
    e.source = source;
    e.completion_text = std::to_string(eps.size());
    eps.push_back(e);
  };
  add(0, 0.6), add(0, 0.9), add(0, 0.9), add(0, 0.1);      // best: the first 0.9 (index 1)
  add(1, 0.2), add(1, std::nullopt);                        // nothing qualifies
  add(2, 5.0, EpisodeSource::Refinement), add(2, 0.5);      // the refinement is never kept
  RaftOptions o;
  Json m;
  auto kept = rejection_sample(eps, o, m);
  std::vector<std::string> ids;
  for (const auto& e : kept) ids.push_back(e.completion_text);
  EXPECT_EQ(ids, (std::vector<std::string>{"1", "7"}));
  EXPECT_EQ(m["raft/kept"], 2.0);
  EXPECT_DOUBLE_EQ(m["raft/kept_frac"].get<double>(), 2.0 / 7.0);
  EXPECT_DOUBLE_EQ(m["raft/groups_kept_frac"].get<double>(), 2.0 / 3.0);
  o.keep = RaftKeep::All;
  ids.clear();
  for (const auto& e : rejection_sample(eps, o, m)) ids.push_back(e.completion_text);
  EXPECT_EQ(ids, (std::vector<std::string>{"0", "1", "2", "7"}));
  o.min_reward = 0.95;
  EXPECT_TRUE(rejection_sample(eps, o, m).empty());
  EXPECT_EQ(m["raft/kept_frac"], 0.0);
  EXPECT_EQ(test::error_of([&] { raft_keep_names().parse("most"); }), "raft.keep must be one of best, all (got \"most\")");
}

}  // namespace
}  // namespace rlf

// Where an update's signal comes from (train/update_shares.h), on hand-counted episodes.
#include <gtest/gtest.h>

#include "train/update_shares.h"

namespace rlf {
namespace {

// Prompt of 2 tokens, then policy turns (with a feedback token between them), each `turn_len` tokens long,
// every policy token with advantage `adv[turn]` and weight `w`.
Episode episode(std::vector<float> adv, int64_t turn_len, float w, EpisodeSource source, bool correct) {
  Episode e;
  e.n_prompt = 2;
  e.tokens.assign(2, 1);
  e.segments.push_back(Segment{SegmentRole::Prompt, 0, 2});
  for (size_t k = 0; k < adv.size(); ++k) {
    if (k > 0) {
      const int64_t b = static_cast<int64_t>(e.tokens.size());
      e.tokens.push_back(7);
      e.segments.push_back(Segment{SegmentRole::Feedback, b, b + 1, static_cast<int64_t>(k) - 1});
    }
    const int64_t b = static_cast<int64_t>(e.tokens.size());
    e.tokens.insert(e.tokens.end(), turn_len, 3);
    e.segments.push_back(Segment{SegmentRole::Policy, b, b + turn_len, static_cast<int64_t>(k)});
  }
  e.loss_weight.assign(e.tokens.size(), 0.0f);
  e.advantage.assign(e.tokens.size(), 0.0f);
  for (const Segment& s : e.segments)
    for (int64_t t = s.begin; t < s.end; ++t)
      if (s.role == SegmentRole::Policy) e.loss_weight[t] = w, e.advantage[t] = adv[s.turn];
      else e.advantage[t] = 99.0f;  // weight 0: never counted
  e.n_turns = static_cast<int64_t>(adv.size());
  e.source = source;
  e.correct = correct;
  return e;
}

TEST(UpdateShares, SplitTheAdvantageMassBySourceTurnAndFeedbackSuccess) {
  std::vector<Episode> eps;
  eps.push_back(episode({-1.0f}, 4, 1.0f, EpisodeSource::Rollout, false));        // mass 4
  eps.push_back(episode({0.5f, 2.0f}, 2, 1.0f, EpisodeSource::Rollout, true));    // 1 + 4: solved after feedback
  eps.push_back(episode({3.0f}, 2, 0.5f, EpisodeSource::Refinement, true));       // 3
  eps.push_back(episode({0.0f}, 5, 1.0f, EpisodeSource::Replay, true));           // 0: does not enter
  eps.push_back(episode({-2.0f}, 1, 1.0f, EpisodeSource::Replay, true));          // 2
  Episode no_adv = episode({1.0f}, 3, 1.0f, EpisodeSource::Rollout, true);
  no_adv.advantage.clear();                                                         // no advantage: skipped
  eps.push_back(no_adv);
  LocalReducer reducer;
  const Json m = update_share_metrics(eps, reducer);
  const double total = 4 + 5 + 3 + 2;
  EXPECT_EQ(m["update/episodes_rollout"].get<double>(), 2);
  EXPECT_EQ(m["update/episodes_refinement"].get<double>(), 1);
  EXPECT_EQ(m["update/episodes_replay"].get<double>(), 1);
  EXPECT_DOUBLE_EQ(m["update/share_rollout"].get<double>(), 9 / total);
  EXPECT_DOUBLE_EQ(m["update/share_refinement"].get<double>(), 3 / total);
  EXPECT_DOUBLE_EQ(m["update/share_replay"].get<double>(), 2 / total);
  EXPECT_DOUBLE_EQ(m["update/share_later_turns"].get<double>(), 4 / total);
  EXPECT_DOUBLE_EQ(m["update/share_solved_after_feedback"].get<double>(), 5 / total);
}

TEST(UpdateShares, AreZeroWithoutSignal) {
  std::vector<Episode> eps{episode({0.0f, 0.0f}, 3, 1.0f, EpisodeSource::Rollout, true)};
  LocalReducer reducer;
  const Json m = update_share_metrics(eps, reducer);
  EXPECT_EQ(m["update/episodes_rollout"].get<double>(), 0);
  EXPECT_EQ(m["update/share_rollout"].get<double>(), 0);
  EXPECT_EQ(m["update/share_later_turns"].get<double>(), 0);
}

}  // namespace
}  // namespace rlf

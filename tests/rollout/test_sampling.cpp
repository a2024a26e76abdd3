// The sampler alone: statistical checks with stated tolerances.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "util/error.h"

#include "rollout/sampling.h"

namespace rlf {
namespace {

TEST(Sampling, EmpiricalFrequenciesMatchSoftmax) {
  std::vector<float> logits = {2.0f, 1.0f, 0.0f, -1.0f, -20.0f};
  SamplingParams p;
  Rng rng(1);
  SamplerScratch s;
  std::vector<int> counts(5, 0);
  const int N = 200000;
  for (int i = 0; i < N; ++i) counts[sample_token(logits.data(), 5, p, rng, s).id]++;
  double z = 0;
  for (float l : logits) z += std::exp(l);
  for (int k = 0; k < 4; ++k) {
    double expect = std::exp(logits[k]) / z;
    double sd = std::sqrt(expect * (1 - expect) / N);
    EXPECT_NEAR(counts[k] / double(N), expect, 5 * sd) << "token " << k;  // 5 sigma
  }
}

TEST(Sampling, TemperatureTopKTopPMinP) {
  std::vector<float> logits = {3.0f, 2.9f, 1.0f, 0.5f, -1.0f};
  Rng rng(2);
  SamplerScratch s;
  SamplingParams k2;
  k2.top_k = 2;
  SamplingParams p50;
  p50.top_p = 0.5;  // the top token alone has < 50% mass: nucleus = {0, 1}
  SamplingParams minp;
  minp.min_p = 0.5;  // keeps tokens with p >= 0.5 * p_max: {0, 1}
  for (const auto* params : {&k2, &p50, &minp}) {
    std::set<int32_t> seen;
    for (int i = 0; i < 2000; ++i) seen.insert(sample_token(logits.data(), 5, *params, rng, s).id);
    EXPECT_EQ(seen, (std::set<int32_t>{0, 1}));
  }
  SamplingParams greedy;
  greedy.temperature = 0;
  EXPECT_EQ(sample_token(logits.data(), 5, greedy, rng, s).id, 0);
}

// The kept set sample_token_id leaves in its scratch is what the filters
// keep (written out here from the softmax by hand); none when nothing is
// filtered or the draw is greedy.
TEST(Sampling, TheKeptSetIsWhatTheFiltersKeep) {
  // softmax: 0.467, 0.423, 0.063, 0.038, 0.009 (cumulative 0.467, 0.890, 0.953, ...)
  std::vector<float> logits = {3.0f, 2.9f, 1.0f, 0.5f, -1.0f};
  auto kept = [&](const SamplingParams& p) {
    Rng rng(3);
    SamplerScratch s;
    const int32_t id = sample_token_id(logits.data(), 5, p, rng, s);
    std::set<int32_t> set;
    for (size_t i = 0; i < s.kept; ++i) set.insert(s.candidates[i].second);
    if (!set.empty()) EXPECT_TRUE(set.count(id)) << "the draw is in its kept set";
    return set;
  };
  SamplingParams k3, p90, minp, k2p90, plain, greedy;
  k3.top_k = 3;
  p90.top_p = 0.9;   // 0.890 < 0.9: the third token joins
  minp.min_p = 0.1;  // p >= 0.0467: {0, 1, 2}
  k2p90.top_k = 2, k2p90.top_p = 0.9;  // top-p over the two kept by top-k: 0.467 / 0.890 < 0.9 -> both
  greedy.temperature = 0;
  EXPECT_EQ(kept(k3), (std::set<int32_t>{0, 1, 2}));
  EXPECT_EQ(kept(p90), (std::set<int32_t>{0, 1, 2}));
  EXPECT_EQ(kept(minp), (std::set<int32_t>{0, 1, 2}));
  EXPECT_EQ(kept(k2p90), (std::set<int32_t>{0, 1}));
  EXPECT_TRUE(kept(plain).empty());
  EXPECT_TRUE(kept(greedy).empty());
}

// Top-k over a real-sized vocabulary with many tied logits: only the k best
// (higher logit first, then lower id) are ever drawn, at softmax frequencies
// over them; k = 1 is the argmax with the lowest id among ties.
TEST(Sampling, TopKOverALargeVocabularyKeepsExactlyTheKBest) {
  const int64_t V = 32000;
  Rng gen(7);
  std::vector<float> logits(V);
  for (auto& l : logits) l = std::round(static_cast<float>(gen.uniform()) * 40.0f) / 4.0f;  // steps of 0.25: ties
  std::vector<int32_t> order(V);
  for (int32_t i = 0; i < V; ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
    return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
  });
  SamplerScratch s;
  Rng rng(8);
  for (const int k : {1, 50, 70}) {
    SamplingParams p;
    p.top_k = k;
    p.temperature = 4.0;  // flatter: every kept token is drawn often
    const std::set<int32_t> best(order.begin(), order.begin() + k);
    std::map<int32_t, int> counts;
    const int N = 20000;
    for (int i = 0; i < N; ++i) counts[sample_token_id(logits.data(), V, p, rng, s)]++;
    for (const auto& [id, c] : counts) EXPECT_EQ(best.count(id), 1u) << "k " << k << " drew " << id;
    double z = 0;
    for (int32_t id : best) z += std::exp(logits[id] / p.temperature);
    for (int32_t id : best) {
      const double expect = std::exp(logits[id] / p.temperature) / z;
      const double sd = std::sqrt(expect * (1 - expect) / N);
      EXPECT_NEAR(counts[id] / double(N), expect, 5 * sd + 1e-12) << "k " << k << " token " << id;
    }
  }
}

TEST(Sampling, LogprobIsAtTemperatureOne) {
  std::vector<float> logits = {1.0f, 2.0f, 3.0f};
  SamplingParams p;
  p.temperature = 0.1;
  Rng rng(3);
  SamplerScratch s;
  auto t = sample_token(logits.data(), 3, p, rng, s);
  double z = std::exp(1.0) + std::exp(2.0) + std::exp(3.0);
  EXPECT_NEAR(t.logprob, logits[t.id] - std::log(z), 1e-6);
}

TEST(Sampling, ValidationNamesTheField) {
  SamplingParams p;
  p.top_p = 0;
  try {
    p.validate();
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("top_p"), std::string::npos);
  }
}

}  // namespace
}  // namespace rlf

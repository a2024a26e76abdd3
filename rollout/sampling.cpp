#include "rollout/sampling.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "util/error.h"

namespace rlf {

void SamplingParams::validate(const std::string& k) const {
  check(std::isfinite(temperature) && temperature >= 0, k, "temperature must be >= 0 (got ", temperature, "; 0 = greedy)");
  check(top_k >= 0, k, "top_k must be >= 0 (got ", top_k, "; 0 = off)");
  check(top_p > 0 && top_p <= 1, k, "top_p must be in (0, 1] (got ", top_p, "; 1 = off)");
  check(min_p >= 0 && min_p < 1, k, "min_p must be in [0, 1) (got ", min_p, "; 0 = off)");
  check(max_new_tokens > 0, k, "max_new_tokens must be > 0 (got ", max_new_tokens, ")");
  for (const auto& s : stop_strings) check(!s.empty(), k, "stop must not contain an empty string");
}

Rng::Rng(uint64_t seed) {
  uint64_t x = seed;
  for (auto& s : s_) s = x = mix_seed(x);
}

static inline uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

uint64_t Rng::next() {
  const uint64_t result = rotl(s_[1] * 5, 7) * 9;
  const uint64_t t = s_[1] << 17;
  s_[2] ^= s_[0];
  s_[3] ^= s_[1];
  s_[1] ^= s_[2];
  s_[0] ^= s_[3];
  s_[2] ^= t;
  s_[3] = rotl(s_[3], 45);
  return result;
}

double Rng::uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

float token_logprob(const float* logits, int64_t n, int32_t id) {
  float mx = -std::numeric_limits<float>::infinity();
  for (int64_t i = 0; i < n; ++i) mx = std::max(mx, logits[i]);
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) sum += std::exp(static_cast<double>(logits[i] - mx));
  return static_cast<float>(static_cast<double>(logits[id] - mx) - std::log(sum));
}

int32_t draw_from_weights(const float* probs, int64_t n, double total, Rng& rng) {
  const double u = rng.uniform() * total;
  double acc = 0;
  int64_t last_positive = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (probs[i] > 0) last_positive = i;
    acc += probs[i];
    if (acc > u) return static_cast<int32_t>(i);
  }
  return static_cast<int32_t>(last_positive);  // rounding left u just above the sum
}

static int32_t argmax(const float* logits, int64_t n) {
  int64_t best = 0;
  for (int64_t i = 1; i < n; ++i)
    if (logits[i] > logits[best]) best = i;
  return static_cast<int32_t>(best);
}

SampledToken sample_token(const float* logits, int64_t n, const SamplingParams& p, Rng& rng, SamplerScratch& scratch) {
  SampledToken out;
  out.id = sample_token_id(logits, n, p, rng, scratch);
  out.logprob = token_logprob(logits, n, out.id);
  return out;
}

int32_t sample_token_id(const float* logits, int64_t n, const SamplingParams& p, Rng& rng, SamplerScratch& scratch) {
  scratch.kept = 0;
  if (p.temperature == 0) return argmax(logits, n);
  const bool filtered = (p.top_k > 0 && p.top_k < n) || p.top_p < 1 || p.min_p > 0;
  const double inv_t = 1.0 / p.temperature;
  if (!filtered) {
    // Plain sampling over the whole vocabulary: one pass for the max, one for
    // the normaliser, one to find the draw.
    float mx = -std::numeric_limits<float>::infinity();
    for (int64_t i = 0; i < n; ++i) mx = std::max(mx, logits[i]);
    double sum = 0;
    for (int64_t i = 0; i < n; ++i) sum += std::exp((logits[i] - mx) * inv_t);
    double u = rng.uniform() * sum, acc = 0;
    int64_t pick = n - 1;
    for (int64_t i = 0; i < n; ++i) {
      acc += std::exp((logits[i] - mx) * inv_t);
      if (acc > u) {
        pick = i;
        break;
      }
    }
    while (pick > 0 && !std::isfinite(logits[pick])) --pick;  // never pick a -inf token at the tail
    return static_cast<int32_t>(pick);
  }
  auto& cand = scratch.candidates;
  auto by_logit_desc = [](const auto& a, const auto& b) { return a.first > b.first || (a.first == b.first && a.second < b.second); };
  if (p.top_k > 0 && p.top_k < n) {
    // The k best in one pass: a heap of the best so far, its worst on top;
    // past the first few thousand tokens almost every logit fails the one
    // comparison with that worst. Then sorted, best first.
    const size_t k = static_cast<size_t>(p.top_k);
    cand.resize(k);
    for (size_t i = 0; i < k; ++i) cand[i] = {logits[i], static_cast<int32_t>(i)};
    std::make_heap(cand.begin(), cand.end(), by_logit_desc);
    for (int64_t i = static_cast<int64_t>(k); i < n; ++i) {
      const std::pair<float, int32_t> c{logits[i], static_cast<int32_t>(i)};
      if (!by_logit_desc(c, cand.front())) continue;
      std::pop_heap(cand.begin(), cand.end(), by_logit_desc);
      cand.back() = c;
      std::push_heap(cand.begin(), cand.end(), by_logit_desc);
    }
    std::sort(cand.begin(), cand.end(), by_logit_desc);
  } else {
    cand.resize(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) cand[i] = {logits[i], static_cast<int32_t>(i)};
  }
  size_t keep = cand.size();
  // Sort (partially, growing) until the nucleus is covered.
  float mx = std::max_element(cand.begin(), cand.end(), [](auto& a, auto& b) { return a.first < b.first; })->first;
  double total = 0;
  for (auto& c : cand) total += std::exp((c.first - mx) * inv_t);
  size_t sorted = std::min<size_t>(cand.size(), 64);
  std::partial_sort(cand.begin(), cand.begin() + sorted, cand.end(), by_logit_desc);
  if (p.top_p < 1) {
    double acc = 0;
    size_t i = 0;
    for (;;) {
      for (; i < sorted; ++i) {
        acc += std::exp((cand[i].first - mx) * inv_t);
        if (acc >= p.top_p * total) break;
      }
      if (i < sorted || sorted == cand.size()) break;
      size_t next = std::min(cand.size(), sorted * 4);
      std::partial_sort(cand.begin() + sorted, cand.begin() + next, cand.end(), by_logit_desc);
      sorted = next;
    }
    keep = std::min(cand.size(), i + 1);
  } else {
    keep = cand.size();
  }
  if (p.min_p > 0) {
    // p_i >= min_p * p_max  <=>  (l_i - max) / T >= log(min_p); candidates are sorted up to `sorted`.
    const double floor = std::log(p.min_p);
    size_t k = 0;
    if (keep > sorted) {
      std::sort(cand.begin() + sorted, cand.begin() + keep, by_logit_desc);
      sorted = keep;
    }
    while (k < keep && (cand[k].first - mx) * inv_t >= floor) ++k;
    keep = std::max<size_t>(1, k);
  }
  scratch.kept = keep;
  double mass = 0;
  for (size_t i = 0; i < keep; ++i) mass += std::exp((cand[i].first - mx) * inv_t);
  double u = rng.uniform() * mass, acc = 0;
  size_t pick = keep - 1;
  for (size_t i = 0; i < keep; ++i) {
    acc += std::exp((cand[i].first - mx) * inv_t);
    if (acc > u) {
      pick = i;
      break;
    }
  }
  return cand[pick].second;
}

}  // namespace rlf

// Per-token streams (env/token_streams.h) reaching the micro-batch: every row
// of RLF_TOKEN_STREAMS is checked from its one declaration — present or not
// as its `batch` says, column t holding token t + 1's value, rows without it
// holding `missing`, padding holding `pad`, and its mask.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "tests/support/test_env.h"
#include "train/micro_batch.h"

namespace rlf {
namespace {

namespace ts = token_stream;

constexpr int64_t kWidth = 3;  // k of the PerTokenK streams here

// An episode of n tokens with only the streams every episode has.
Episode bare_episode(size_t n) {
  Episode e;
  for (size_t t = 0; t < n; ++t) {
    e.tokens.push_back(static_cast<int32_t>(10 + t));
    e.loss_weight.push_back(t >= 1 ? 1.0f : 0.0f);
    e.old_logprob.push_back(-0.5f * static_cast<float>(t));
  }
  return e;
}

// Distinct values for a stream: base + i, with a NaN at token 2 for a stream
// masked by finiteness (a position without a target).
template <class T>
std::vector<T> stream_values(size_t n_tokens, int64_t width, float base, bool with_nan) {
  std::vector<T> v(n_tokens * static_cast<size_t>(width));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<T>(base + static_cast<float>(i));
  if constexpr (std::is_floating_point_v<T>)
    if (with_nan) v[2 * static_cast<size_t>(width)] = std::numeric_limits<T>::quiet_NaN();
  return v;
}

// What a Fill stands for (the declaration's meaning, written out again here).
double expected_fill(ts::Fill f, int64_t j, int64_t width) {
  switch (f) {
    case ts::Fill::Zero: return 0.0;
    case ts::Fill::NaN: return std::nan("");
    case ts::Fill::Column: return static_cast<double>(j);
    case ts::Fill::UniformLogprob: return -std::log(static_cast<double>(width));
    case ts::Fill::NoId: return -1.0;
  }
  return 0.0;
}

void expect_value(double got, double want, const std::string& where) {
  if (std::isnan(want)) EXPECT_TRUE(std::isnan(got)) << where;
  else EXPECT_NEAR(got, want, 1e-6) << where;
}

struct Spec {
  Stream key;
  std::string name;
  ts::Batch batch;
  ts::Width width;
  ts::Fill missing, pad;
  ts::Mask mask;
};

template <class T>
void check_stream(std::vector<T> Episode::*member, const Spec& s, float base) {
  SCOPED_TRACE(s.name);
  const int64_t W = s.width == ts::Width::One ? 1 : kWidth;
  const bool finite_mask = s.mask == ts::Mask::Finite;
  Episode a = bare_episode(6), b = bare_episode(3);  // a: positions [0, 5), b: [0, 2) then padding
  a.*member = stream_values<T>(a.tokens.size(), W, base, finite_mask);
  if (s.batch == ts::Batch::Always) b.*member = stream_values<T>(b.tokens.size(), W, base + 100, finite_mask);
  const MicroBatch mb = make_micro_batch({&a, &b}, torch::kCPU);
  if (s.batch == ts::Batch::Never || s.batch == ts::Batch::All) {
    EXPECT_FALSE(mb.has(s.key)) << "b lacks it";
    if (s.batch == ts::Batch::All) {
      Episode c = b;
      c.*member = stream_values<T>(c.tokens.size(), W, base, finite_mask);
      EXPECT_TRUE(make_micro_batch({&a, &c}, torch::kCPU).has(s.key)) << "every episode has it";
    }
    return;
  }
  ASSERT_TRUE(mb.has(s.key));
  const torch::Tensor x = mb[s.key];
  EXPECT_EQ(x.scalar_type(), std::is_floating_point_v<T> ? torch::kFloat32 : torch::kInt64);
  const std::vector<int64_t> shape =
      s.width == ts::Width::One ? std::vector<int64_t>{2, 5} : std::vector<int64_t>{2, 5, W};
  ASSERT_EQ(x.sizes().vec(), shape);
  const torch::Tensor v = x.to(torch::kFloat64).reshape({2, 5, W});
  EXPECT_EQ(mb.has_mask(s.key), s.mask != ts::Mask::None);
  const torch::Tensor m = s.mask != ts::Mask::None ? mb.mask(s.key) : torch::Tensor();
  for (int64_t r = 0; r < 2; ++r) {
    const Episode& e = r == 0 ? a : b;
    const std::vector<T>& src = e.*member;
    const int64_t length = static_cast<int64_t>(e.tokens.size()) - 1;
    for (int64_t t = 0; t < 5; ++t) {
      bool carried = false;
      for (int64_t j = 0; j < W; ++j) {
        const std::string where = "row " + std::to_string(r) + " column " + std::to_string(t) + " j " + std::to_string(j);
        double want;
        if (t >= length) want = expected_fill(s.pad, j, W);
        else if (src.empty()) want = expected_fill(s.missing, j, W);
        else {
          const double value = static_cast<double>(src[static_cast<size_t>((t + 1) * W + j)]);
          carried = !finite_mask || std::isfinite(value);
          want = carried ? value : expected_fill(s.missing, j, W);
        }
        expect_value(v[r][t][j].item<double>(), want, where);
      }
      if (m.defined()) EXPECT_EQ(m[r][t].item<float>(), carried ? 1.0f : 0.0f) << "mask, row " << r << " column " << t;
    }
  }
}

TEST(TokenStreams, EveryDeclaredStreamReachesTheMicroBatchAsDeclared) {
  float base = 1;
  int n_checked = 0;
#define RLF_CHECK_TOKEN_STREAM(type, name, batch, width, missing, pad, mask)                                  \
  check_stream<type>(&Episode::name, {Stream::name, #name, ts::Batch::batch, ts::Width::width, ts::Fill::missing, \
                                      ts::Fill::pad, ts::Mask::mask},                                        \
                     base);                                                                                  \
  base += 1000, ++n_checked;
  RLF_TOKEN_STREAMS(RLF_CHECK_TOKEN_STREAM)
#undef RLF_CHECK_TOKEN_STREAM
  EXPECT_GE(n_checked, 13);
}

TEST(TokenStreams, PaddingAndMissingRowsByHand) {
  // Rollout-correction log-probs: NaN on a row without them, 0 on padding.
  Episode a = bare_episode(4), b = bare_episode(2);
  a.behaviour_logprob = {0, -1, -2, -3};
  a.teacher_topk_id = {0, 0, 7, 8, 9, 10, 11, 12};  // k = 2
  a.teacher_topk_logprob = {0, 0, 0, -1, -2, -3, -4, -5, -6, -7, -8, -9};
  const MicroBatch mb = make_micro_batch({&a, &b}, torch::kCPU);
  const auto beh = mb[Stream::behaviour_logprob];
  EXPECT_EQ(beh[0][2].item<float>(), -3.0f);
  EXPECT_TRUE(std::isnan(beh[1][0].item<float>())) << "b has none: NaN";
  EXPECT_EQ(beh[1][1].item<float>(), 0.0f) << "padding";
  const auto ids = mb[Stream::teacher_topk_id];
  ASSERT_EQ(ids.sizes().vec(), (std::vector<int64_t>{2, 3, 2}));
  EXPECT_EQ(ids[0][0][0].item<int64_t>(), 7);
  EXPECT_EQ(ids[0][2][1].item<int64_t>(), 12);
  EXPECT_EQ(ids[1][2][1].item<int64_t>(), 1) << "rows without and padding: 0..k-1";
  EXPECT_NEAR(mb[Stream::teacher_topk_logprob][1][0][2].item<float>(), -std::log(3.0), 1e-6) << "uniform over k + 1";
  // The layout: positions continue over the padding, key_mask false there.
  EXPECT_EQ(mb[Stream::positions][1][2].item<int64_t>(), 2);
  EXPECT_FALSE(mb[Stream::key_mask][1][1].item<bool>());
  EXPECT_EQ(mb[Stream::targets][0][2].item<int64_t>(), 13);
}

TEST(TokenStreams, StepLabelsTravelOnTheirOwnStream) {
  Episode e = bare_episode(5);
  const float nan = std::nanf("");
  e.step_label = {nan, nan, 1.0f, nan, 0.0f};  // steps ending at tokens 1 and 3
  const MicroBatch mb = make_micro_batch({&e}, torch::kCPU);
  EXPECT_FALSE(mb.has(Stream::value_target)) << "step labels are not GAE returns";
  EXPECT_FALSE(mb.has(Stream::value));
  EXPECT_TRUE(torch::equal(mb[Stream::step_label], torch::tensor({{0.0f, 1.0f, 0.0f, 0.0f}})));
  EXPECT_TRUE(torch::equal(mb.mask(Stream::step_label), torch::tensor({{0.0f, 1.0f, 0.0f, 1.0f}})));
  EXPECT_TRUE(torch::equal(mb.weight_where(Stream::step_label), torch::tensor({{0.0f, 1.0f, 0.0f, 1.0f}})));
  EXPECT_TRUE(torch::equal(mb.weight_where(Stream::value_target), torch::zeros({1, 4})));
}

TEST(TokenStreams, AbsentStreamsAndBadSizesAreNamed) {
  Episode e = bare_episode(4);
  const MicroBatch mb = make_micro_batch({&e}, torch::kCPU);
  EXPECT_NE(test::error_of([&] { (void)mb[Stream::ref_logprob]; }).find("no stream 'ref_logprob'"), std::string::npos);
  EXPECT_NE(test::error_of([&] { (void)mb.mask(Stream::advantage); }).find("no mask of stream 'advantage'"),
            std::string::npos);
  e.advantage = {1, 2};
  EXPECT_NE(test::error_of([&] { make_micro_batch({&e}, torch::kCPU); }).find("advantage must have one entry per token"),
            std::string::npos);
  e.advantage.clear();
  e.teacher_topk_id = {0, 1, 2, 3, 4};  // 5 entries for 4 tokens
  EXPECT_NE(test::error_of([&] { e.validate(); }).find("teacher_topk_id has 5 entries for 4 tokens"), std::string::npos);
  EXPECT_STREQ(stream_name(Stream::loss_weight), "loss_weight");
  EXPECT_STREQ(stream_name(Stream::seq_accuracy), "seq_accuracy");
}

}  // namespace
}  // namespace rlf

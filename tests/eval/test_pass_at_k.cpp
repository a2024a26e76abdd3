// The unbiased pass@k estimator: hand values from Chen et al.'s formula, the
// edge cases, exact binomials from Python's math.comb (oracle), and the
// reported k values.
#include <gtest/gtest.h>

#include <cmath>
#include <sstream>

#include "eval/pass_at_k.h"
#include "tests/support/test_env.h"
#include "util/error.h"

namespace rlf {
namespace {

using test::error_of;

TEST(PassAtK, HandValues) {
  EXPECT_NEAR(pass_at_k(10, 3, 1), 0.3, 1e-12);
  EXPECT_NEAR(pass_at_k(10, 3, 5), 1.0 - 21.0 / 252.0, 1e-12);  // 1 - C(7,5)/C(10,5)
  EXPECT_NEAR(pass_at_k(10, 3, 2), 1.0 - 21.0 / 45.0, 1e-12);   // 1 - C(7,2)/C(10,2)
  EXPECT_NEAR(pass_at_k(4, 1, 2), 0.5, 1e-12);                  // 1 - C(3,2)/C(4,2) = 1 - 3/6
}

TEST(PassAtK, EdgeCases) {
  for (int64_t k : {1, 2, 5, 10}) {
    EXPECT_EQ(pass_at_k(10, 0, k), 0.0) << k;   // nothing correct
    EXPECT_EQ(pass_at_k(10, 10, k), 1.0) << k;  // everything correct
  }
  EXPECT_EQ(pass_at_k(10, 8, 3), 1.0);  // n - c = 2 < k: every 3-subset holds a correct one
  EXPECT_NEAR(pass_at_k(10, 7, 3), 1.0 - 1.0 / 120.0, 1e-15);  // n - c = k: one all-wrong subset of C(10,3)
  EXPECT_EQ(pass_at_k(1, 1, 1), 1.0);
  EXPECT_EQ(pass_at_k(1, 0, 1), 0.0);
}

TEST(PassAtK, MonotoneInKAndStableForLargeN) {
  for (int64_t c : {0, 1, 17, 100, 250}) {
    double prev = -1;
    for (int64_t k = 1; k <= 256; ++k) {
      const double p = pass_at_k(256, c, k);
      ASSERT_TRUE(std::isfinite(p));
      ASSERT_GE(p, prev) << "c=" << c << " k=" << k;
      ASSERT_LE(p, 1.0);
      prev = p;
    }
  }
  // log-space reference: C(n-c,k)/C(n,k) with lgamma
  auto lchoose = [](double n, double k) { return std::lgamma(n + 1) - std::lgamma(k + 1) - std::lgamma(n - k + 1); };
  EXPECT_NEAR(pass_at_k(1000, 10, 100), 1.0 - std::exp(lchoose(990, 100) - lchoose(1000, 100)), 1e-12);
}

TEST(PassAtK, MatchesExactBinomialsFromPython) {
  RLF_REQUIRE_ORACLE();
  std::ostringstream ours;
  ours.precision(17);
  for (int64_t n : {1, 2, 3, 5, 8, 10, 16, 31, 64})
    for (int64_t c = 0; c <= n; ++c)
      for (int64_t k = 1; k <= n; ++k) ours << n << " " << c << " " << k << " " << pass_at_k(n, c, k) << "\n";
  auto r = test::run_oracle_python(R"(
import math, sys
from fractions import Fraction
worst = 0.0
for n in (1, 2, 3, 5, 8, 10, 16, 31, 64):
    for c in range(n + 1):
        for k in range(1, n + 1):
            exact = 1 - Fraction(math.comb(n - c, k), math.comb(n, k))
            print(n, c, k, repr(float(exact)))
)");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::istringstream want(r.output), got(ours.str());
  int64_t n1, c1, k1, n2, c2, k2;
  double v1, v2;
  int64_t n_lines = 0;
  while (want >> n1 >> c1 >> k1 >> v1) {
    ASSERT_TRUE(got >> n2 >> c2 >> k2 >> v2);
    ASSERT_EQ(std::tie(n1, c1, k1), std::tie(n2, c2, k2));
    EXPECT_NEAR(v2, v1, 1e-13) << "n=" << n1 << " c=" << c1 << " k=" << k1;
    ++n_lines;
  }
  EXPECT_GT(n_lines, 3000);
}

TEST(PassAtK, RejectsBadArguments) {
  EXPECT_EQ(error_of([] { pass_at_k(10, 11, 1); }), "pass_at_k: n_correct = 11 must be in [0, n = 10]");
  EXPECT_EQ(error_of([] { pass_at_k(10, 3, 11); }), "pass_at_k: k = 11 must be in [1, n = 10]");
  EXPECT_EQ(error_of([] { pass_at_k(10, 3, 0); }), "pass_at_k: k = 0 must be in [1, n = 10]");
  EXPECT_EQ(error_of([] { pass_at_k(0, 0, 1); }), "pass_at_k: n = 0: need at least one sample");
}

TEST(PassAtK, ReportedKValues) {
  EXPECT_EQ(reported_k_values(1), (std::vector<int64_t>{1}));
  EXPECT_EQ(reported_k_values(2), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(reported_k_values(10), (std::vector<int64_t>{1, 2, 4, 8, 10}));
  EXPECT_EQ(reported_k_values(16), (std::vector<int64_t>{1, 2, 4, 8, 16}));
  EXPECT_EQ(reported_k_values(5), (std::vector<int64_t>{1, 2, 4, 5}));
}

}  // namespace
}  // namespace rlf

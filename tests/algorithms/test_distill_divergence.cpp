// Divergences on the teacher's top-k plus a tail bucket
// (algorithms/distill_divergence.h): against TRL's GKD generalised JSD on the
// full vocabulary (k = V), against a hand computation with k < V, and the
// zero-mass buckets' exact 0 with finite gradients.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include <torch/torch.h>

#include "algorithms/distill_divergence.h"
#include "tests/support/test_env.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/json_util.h"

namespace rlf::algo {
namespace {

using D = DistillDivergence;

torch::Tensor divergence_topk(const torch::Tensor& student, const torch::Tensor& teacher, int64_t k, D d,
                              double beta = 0.5) {
  auto [ids, teacher_lp] = teacher_topk_buckets(teacher, k);
  return bucket_divergence(bucket_logprobs(student, ids), teacher_lp, d, beta);
}

TEST(DistillDivergence, FullVocabularyMatchesTrlGkd) {
  RLF_REQUIRE_PEER();
  torch::manual_seed(3);
  const int64_t P = 6, V = 11;
  const auto student = torch::randn({P, V}) * 2, teacher = torch::randn({P, V}) * 2;
  const std::vector<double> betas = {0.0, 1.0, 0.1, 0.5, 0.9};
  Json in{{"student", Json::array()}, {"teacher", Json::array()}, {"betas", betas}};
  for (int64_t i = 0; i < P; ++i) {
    Json s = Json::array(), t = Json::array();
    for (int64_t v = 0; v < V; ++v) s.push_back(student[i][v].item<double>()), t.push_back(teacher[i][v].item<double>());
    in["student"].push_back(s), in["teacher"].push_back(t);
  }
  test::TempDir dir;
  write_file_atomic(dir / "in.json", in.dump());
  auto r = test::run_command(test::shell_quote(test::peer_python()) + " " +
                             test::shell_quote(test::source_path("tests/oracle/trl_gkd_jsd.py").string()) + " " +
                             test::shell_quote((dir / "in.json").string()) + " " +
                             test::shell_quote((dir / "out.json").string()));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const Json want = read_json_file((dir / "out.json").string());
  for (size_t b = 0; b < betas.size(); ++b) {
    SCOPED_TRACE("beta " + std::to_string(betas[b]));
    const D d = betas[b] == 0.0 ? D::ForwardKl : betas[b] == 1.0 ? D::ReverseKl : D::Jsd;
    const auto got = divergence_topk(student, teacher, V, d, betas[b]);
    for (int64_t i = 0; i < P; ++i) EXPECT_NEAR(got[i].item<double>(), want[b][i].get<double>(), 1e-5) << "position " << i;
  }
}

// k = 2 of V = 4 by hand: teacher p = (0.5, 0.3, 0.15, 0.05) -> buckets (0.5, 0.3 | 0.2);
// student q = (0.1, 0.2, 0.3, 0.4) -> (0.1, 0.2 | 0.7).
TEST(DistillDivergence, TopKPlusTailByHand) {
  const auto teacher = torch::tensor({0.5, 0.3, 0.15, 0.05}, torch::kFloat64).log().to(torch::kFloat32).view({1, 4});
  const auto student = torch::tensor({0.1, 0.2, 0.3, 0.4}, torch::kFloat64).log().to(torch::kFloat32).view({1, 4});
  auto [ids, tlp] = teacher_topk_buckets(teacher, 2);
  EXPECT_EQ(ids[0][0].item<int64_t>(), 0);
  EXPECT_EQ(ids[0][1].item<int64_t>(), 1);
  EXPECT_NEAR(tlp[0][2].exp().item<double>(), 0.2, 1e-6);
  const double p[3] = {0.5, 0.3, 0.2}, q[3] = {0.1, 0.2, 0.7};
  double fwd = 0, rev = 0, jsd = 0;
  const double beta = 0.3;
  for (int i = 0; i < 3; ++i) {
    fwd += p[i] * std::log(p[i] / q[i]);
    rev += q[i] * std::log(q[i] / p[i]);
    const double m = beta * p[i] + (1 - beta) * q[i];
    jsd += beta * p[i] * std::log(p[i] / m) + (1 - beta) * q[i] * std::log(q[i] / m);
  }
  EXPECT_NEAR(divergence_topk(student, teacher, 2, D::ForwardKl).item<double>(), fwd, 1e-5);
  EXPECT_NEAR(divergence_topk(student, teacher, 2, D::ReverseKl).item<double>(), rev, 1e-5);
  EXPECT_NEAR(divergence_topk(student, teacher, 2, D::Jsd, beta).item<double>(), jsd, 1e-5);
  // Coarse-graining never raises a divergence: top-2 + tail <= the full vocabulary's.
  EXPECT_LE(divergence_topk(student, teacher, 2, D::ForwardKl).item<double>(),
            divergence_topk(student, teacher, 4, D::ForwardKl).item<double>() + 1e-6);
}

TEST(DistillDivergence, EmptyTailAndGradientsAreFinite) {
  torch::manual_seed(1);
  const auto teacher = torch::randn({2, 3, 5});
  for (D d : {D::ReverseKl, D::ForwardKl, D::Jsd})
    for (int64_t k : {1, 3, 5}) {
      auto student = torch::randn({2, 3, 5}).requires_grad_(true);
      auto out = divergence_topk(student, teacher, k, d, 0.4);
      EXPECT_TRUE(torch::isfinite(out).all().item<bool>()) << distill_divergence_name(d) << " k " << k;
      EXPECT_TRUE((out >= -1e-6).all().item<bool>());
      out.sum().backward();
      EXPECT_TRUE(torch::isfinite(student.grad()).all().item<bool>()) << distill_divergence_name(d) << " k " << k;
      // The same distributions: 0.
      EXPECT_NEAR(divergence_topk(teacher, teacher, k, d, 0.4).abs().max().item<double>(), 0.0, 1e-6);
    }
}

TEST(DistillDivergence, NamesAndErrors) {
  for (D d : {D::ReverseKl, D::ForwardKl, D::Jsd}) EXPECT_EQ(parse_distill_divergence(distill_divergence_name(d)), d);
  try {
    parse_distill_divergence("kl");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("distill.divergence"), std::string::npos) << e.what();
  }
  const auto x = torch::zeros({1, 3});
  EXPECT_THROW(bucket_divergence(x, x, D::Jsd, 1.0), Error);
  EXPECT_THROW(teacher_topk_buckets(x, 4), Error);
}

}  // namespace
}  // namespace rlf::algo

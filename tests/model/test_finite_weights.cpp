// Non-finite weights are found and named (model/finite_weights.h), and a
// merge of a model holding them, or a merge whose result holds them, is
// refused (model/merge.h) instead of written without a word.
#include <gtest/gtest.h>

#include <limits>

#include "model/finite_weights.h"
#include "model/loader.h"
#include "model/merge.h"
#include "tests/support/test_env.h"

namespace rlf {
namespace {

CausalLM tiny(uint64_t seed) {
  ModelConfig c = ModelConfig::preset("stories260K");
  c.num_hidden_layers = 1;
  return make_random_model(c, seed, torch::kFloat32, torch::kCPU);
}

TEST(FiniteWeights, TheFirstNonFiniteTensorIsNamedWithItsCounts) {
  CausalLM m = tiny(1);
  EXPECT_FALSE(find_non_finite(*m).has_value());
  check_finite_weights(*m, "x");
  torch::NoGradGuard ng;
  auto p = m->named_parameters();
  p["model.layers.0.mlp.down_proj.weight"][0][1] = std::numeric_limits<float>::quiet_NaN();
  p["model.layers.0.mlp.down_proj.weight"][2][1] = -std::numeric_limits<float>::infinity();
  p["model.layers.0.mlp.down_proj.weight"][3][1] = std::numeric_limits<float>::quiet_NaN();
  const auto bad = find_non_finite(*m);
  ASSERT_TRUE(bad.has_value());
  EXPECT_EQ(bad->name, "model.layers.0.mlp.down_proj.weight");
  EXPECT_EQ(bad->n_nan, 2);
  EXPECT_EQ(bad->n_inf, 1);
  EXPECT_EQ(bad->numel, p["model.layers.0.mlp.down_proj.weight"].numel());
  EXPECT_EQ(test::error_of([&] { check_finite_weights(*m, "the merged model"); }),
            "tensor 'model.layers.0.mlp.down_proj.weight' holds 2 NaN values and 1 infinite value (of 11008): the "
            "merged model would not compute anything meaningful, so it is not written");
}

TEST(FiniteWeights, AMergeOfANanModelOrIntoInfinityIsRefused) {
  test::TempDir dir;
  save_model(*tiny(1), dir / "a");
  CausalLM b = tiny(2);
  {
    torch::NoGradGuard ng;
    b->named_parameters()["model.norm.weight"][7] = std::numeric_limits<float>::quiet_NaN();
  }
  save_model(*b, dir / "nan");
  MergeOptions o;
  o.models = {dir / "a", dir / "nan"};
  std::string e = test::error_of([&] { merge_models(o); });
  EXPECT_NE(e.find("merge: model '" + (dir / "nan").string() + "': tensor 'model.norm.weight' holds 1 NaN value (of 64)"),
            std::string::npos)
      << e;
  // Finite inputs whose weighted sum overflows fp32.
  CausalLM big = tiny(3);
  {
    torch::NoGradGuard ng;
    big->named_parameters()["model.embed_tokens.weight"][0][0] = 3e38f;
  }
  save_model(*big, dir / "big");
  o.models = {dir / "big", dir / "big"};
  o.weights = {1.0, 1.0};
  e = test::error_of([&] { merge_models(o); });
  EXPECT_NE(e.find("merge: tensor 'model.embed_tokens.weight' holds 1 infinite value"), std::string::npos) << e;
  o.weights = {0.5, 0.5};
  EXPECT_NO_THROW(merge_models(o));
}

}  // namespace
}  // namespace rlf

// rlf compare on tiny runs: every config runs once per seed under the same
// rollout-token budget (runs end when it is spent), the means and standard
// deviations are those of the runs, a second call reads the finished runs
// instead of training again, and configs with different budgets are refused.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

#include "model/loader.h"
#include "tests/support/test_env.h"
#include "tests/train/run_fixtures.h"
#include "train/compare.h"

namespace rlf {
namespace {

std::filesystem::path write_config(const test::TempDir& dir, const std::string& name, const std::filesystem::path& model,
                                   const std::string& extra, int64_t budget) {
  const std::filesystem::path p = dir / (name + ".toml");
  std::ofstream f(p);
  f << "[model]\npath = \"" << model.string() << "\"\n"
    << "[data]\npreset = \"arithmetic\"\neval_size = 4\n[data.arithmetic]\nn_problems = 40\n"
    << "[[reward]]\ntype = \"math\"\nanswer_format = \"gsm8k\"\n"
    << "[rollout]\nprompts_per_step = 2\ngroup_size = 4\nmax_new_tokens = 8\n"
    << "[algorithm]\nmicro_batch_size = 8\n[optim]\nlr = 0.001\n"
    << extra << "[run]\nsteps = 50\nrollout_token_budget = " << budget << "\n";
  return p;
}

// The one formula of the table's spread, by hand.
TEST(Compare, MeanStandardDeviationAndStandardError) {
  const MeanSe m = mean_se({1, 2, 3, 4});
  EXPECT_EQ(m.n, 4);
  EXPECT_DOUBLE_EQ(m.mean, 2.5);
  EXPECT_NEAR(m.sd, std::sqrt(5.0 / 3.0), 1e-12);
  EXPECT_NEAR(m.se, std::sqrt(5.0 / 3.0) / 2, 1e-12);
  const MeanSe one = mean_se({0.7});
  EXPECT_DOUBLE_EQ(one.mean, 0.7);
  EXPECT_EQ(one.sd, 0.0);
  EXPECT_EQ(one.se, 0.0);
  EXPECT_EQ(mean_se({}).n, 0);
}

TEST(Compare, SameBudgetSeedsMeansAndReuse) {
  test::TempDir dir;
  ModelConfig c = ModelConfig::preset("stories260K");
  c.num_hidden_layers = 1;
  auto model = make_random_model(c, 1, torch::kFloat32, torch::kCPU);
  SaveOptions so;
  so.tokenizer_source = test::shared_path("models/stories260K/tok512.bin");
  save_model(*model, dir / "tiny", so);
  const auto a = write_config(dir, "scalar", dir / "tiny", "", 100);
  const auto b = write_config(dir, "refined", dir / "tiny", "[refine]\nenabled = true\n[critic]\ntype = \"text\"\n", 100);
  CompareOptions o;
  o.seeds = 2;
  o.out_dir = dir / "cmp";
  o.quiet = true;
  CompareResult r = compare_configs({a, b}, o);
  ASSERT_EQ(r.entries.size(), 2u);
  EXPECT_EQ(r.rollout_token_budget, 100);
  for (const CompareEntry& e : r.entries) {
    ASSERT_EQ(e.runs.size(), 2u);
    std::vector<double> after;
    for (const CompareRun& run : e.runs) {
      EXPECT_FALSE(run.reused);
      EXPECT_GE(run.rollout_tokens, 100) << e.name;      // the budget was spent...
      EXPECT_LT(run.steps, 50) << e.name;                // ...before run.steps
      test::expect_pass1_over(run.pass1_after, 4, e.name);  // data.eval_size = 4
      after.push_back(run.pass1_after);
      EXPECT_TRUE(std::filesystem::exists(dir / "cmp" / e.name / ("seed-" + std::to_string(run.seed)) / "summary.json"));
    }
    EXPECT_DOUBLE_EQ(e.pass1_after_mean, (after[0] + after[1]) / 2);
    EXPECT_NEAR(e.pass1_after_std, std::abs(after[0] - after[1]) / std::sqrt(2.0), 1e-12);
  }
  EXPECT_EQ(r.entries[0].name, "scalar");
  for (const CompareEntry& e : r.entries) EXPECT_NEAR(e.pass1_after_se, e.pass1_after_std / std::sqrt(2.0), 1e-12);
  // Paired against the first config, seed by seed.
  const double d0 = r.entries[1].runs[0].pass1_after - r.entries[0].runs[0].pass1_after;
  const double d1 = r.entries[1].runs[1].pass1_after - r.entries[0].runs[1].pass1_after;
  EXPECT_NEAR(r.entries[1].vs_first_mean, (d0 + d1) / 2, 1e-12);
  EXPECT_NEAR(r.entries[1].vs_first_se, std::abs(d0 - d1) / 2, 1e-12);
  EXPECT_EQ(r.entries[1].vs_first_ahead, (d0 > 0) + (d1 > 0));
  EXPECT_EQ(r.entries[0].vs_first_mean, 0.0);
  EXPECT_NE(r.table().find("| refined | "), std::string::npos) << r.table();
  EXPECT_NE(r.table().find("vs scalar (paired"), std::string::npos) << r.table();
  EXPECT_EQ(r.table().find("SFT alone"), std::string::npos) << r.table();  // no run.sft_control
  const Json j = r.to_json();
  EXPECT_EQ(j["configs"][1]["runs"].size(), 2u);
  EXPECT_EQ(j["seeds"], 2);

  // Again: the finished runs are read, not run.
  CompareResult again = compare_configs({a, b}, o);
  for (const CompareEntry& e : again.entries)
    for (const CompareRun& run : e.runs) EXPECT_TRUE(run.reused) << e.name;
  EXPECT_EQ(again.to_json()["configs"], j["configs"]);

  // A different budget is refused.
  const auto c3 = write_config(dir, "greedy", dir / "tiny", "", 200);
  EXPECT_NE(test::error_of([&] { compare_configs({a, c3}, o); })
                .find("configs differ in run.rollout_token_budget"),
            std::string::npos);
}

}  // namespace
}  // namespace rlf

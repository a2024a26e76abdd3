// Step-labelled solutions for process reward models: the generated chained
// sums (every step checked by re-doing the arithmetic, labels 1 before the
// first wrong step and 0 from it on), step/label files, the held-out split,
// and errors naming the record and field.
#include <gtest/gtest.h>

#include <cstdio>

#include "data/step_dataset.h"
#include "tests/data/data_fixtures.h"
#include "tests/support/test_env.h"

namespace rlf {
namespace {

TEST(StepDataset, ChainedSumsAreLabelledRightUntilTheFirstWrongStep) {
  StepDatasetOptions o;
  o.preset = "arithmetic";
  o.prompt_template = "{prompt}";
  o.n_terms = 4;
  o.arithmetic.n_problems = 400;
  o.arithmetic.min_digits = 1;
  o.arithmetic.max_digits = 2;
  o.eval_size = 40;
  StepDataset ds = StepDataset::load(o);
  ASSERT_EQ(ds.train().size(), 360u);
  ASSERT_EQ(ds.eval().size(), 40u);
  int64_t wrong = 0;
  for (const auto* split : {&ds.train(), &ds.eval()})
    for (const StepExample& e : *split) {
      ASSERT_EQ(e.steps.size(), 4u);  // three additions and the answer
      ASSERT_EQ(e.labels.size(), 4u);
      // Re-do the arithmetic: the question's numbers, each step's sum.
      long t[4];
      ASSERT_EQ(std::sscanf(e.prompt.c_str(), "What is %ld + %ld + %ld + %ld?", &t[0], &t[1], &t[2], &t[3]), 4) << e.prompt;
      long truth = t[0], running = t[0];
      bool broken = false;
      for (int k = 1; k < 4; ++k) {
        long a = 0, b = 0, s = 0;
        ASSERT_EQ(std::sscanf(e.steps[static_cast<size_t>(k - 1)].c_str(), "%ld + %ld = %ld", &a, &b, &s), 3);
        EXPECT_EQ(a, running) << "each step starts from the previous step's result";
        EXPECT_EQ(b, t[k]);
        truth += t[k];
        broken = broken || s != a + b;
        EXPECT_EQ(e.labels[static_cast<size_t>(k - 1)], broken ? 0.0 : 1.0) << e.response("; ");
        running = s;
      }
      EXPECT_EQ(e.steps[3], "#### " + std::to_string(running));
      EXPECT_EQ(e.labels[3], running == truth ? 1.0 : 0.0);
      EXPECT_EQ(e.reference, std::to_string(truth));
      EXPECT_EQ(broken, running != truth) << "one wrong step, carried to the answer";
      wrong += broken;
    }
  EXPECT_GT(wrong, 150);
  EXPECT_LT(wrong, 250);
  EXPECT_EQ(ds.train()[3].response("; "),
            ds.train()[3].steps[0] + "; " + ds.train()[3].steps[1] + "; " + ds.train()[3].steps[2] + "; " +
                ds.train()[3].steps[3]);
}

TEST(StepDataset, FilesCarryStepsAndLabelsAndErrorsNameTheField) {
  test::TempDir dir;
  StepDatasetOptions o;
  o.path = test::write_fixture(dir, "s.jsonl",
                               "{\"prompt\": \"2+2+1?\", \"steps\": [\"2+2=4\", \"4+1=5\"], \"labels\": [1, 0.75]}\n"
                               "{\"prompt\": \"1+1?\", \"steps\": [\"1+1=3\"], \"labels\": [false]}\n");
  StepDataset ds = StepDataset::load(o);
  ASSERT_EQ(ds.train().size(), 2u);
  EXPECT_EQ(ds.train()[0].steps, (std::vector<std::string>{"2+2=4", "4+1=5"}));
  EXPECT_EQ(ds.train()[0].labels, (std::vector<double>{1.0, 0.75}));
  EXPECT_EQ(ds.train()[1].labels, (std::vector<double>{0.0}));
  EXPECT_EQ(ds.train()[0].response("\n"), "2+2=4\n4+1=5");
  auto error = [&](const std::string& line) {
    o.path = test::write_fixture(dir, "bad.jsonl", line + "\n");
    return test::error_of([&] { StepDataset::load(o); });
  };
  EXPECT_NE(error("{\"prompt\": \"a\", \"steps\": [\"x\", \"y\"], \"labels\": [1]}").find("one number per step (2)"),
            std::string::npos);
  EXPECT_NE(error("{\"prompt\": \"a\", \"steps\": [], \"labels\": []}").find("non-empty array"), std::string::npos);
  EXPECT_NE(error("{\"prompt\": \"a\", \"steps\": [\"x\"], \"labels\": [2]}").find("'labels' #0 must be a number in [0, 1]"),
            std::string::npos);
  EXPECT_NE(error("{\"prompt\": \"a\", \"steps\": [\"x\\ny\"], \"labels\": [1]}").find("contains the delimiter"),
            std::string::npos);
  o.eval_size = 1;
  EXPECT_NE(error("{\"prompt\": \"a\", \"steps\": [\"x\"], \"labels\": [1]}").find("lower process.data.eval_size"),
            std::string::npos);
  o.eval_size = 0;
  o.on_bad_record = "skip";
  o.path = test::write_fixture(dir, "mixed.jsonl",
                               "{\"prompt\": \"a\", \"steps\": [\"x\"], \"labels\": [1]}\n"
                               "{\"prompt\": \"b\", \"steps\": [\"x\"], \"labels\": [7]}\n");
  StepDataset skipped = StepDataset::load(o);
  EXPECT_EQ(skipped.train().size(), 1u);
  EXPECT_EQ(skipped.n_skipped(), 1u);
  const std::string e = test::error_of(
      [] { step_dataset_options_from_json(Json{{"preset", "arithmetic"}, {"delimeter", "; "}}, "cfg [process.data]"); });
  EXPECT_NE(e.find("unknown key 'delimeter'"), std::string::npos) << e;
  EXPECT_NE(test::error_of([] { step_dataset_options_from_json(Json{{"n_terms", 1}}, "cfg"); }).find("n_terms"),
            std::string::npos);
}

}  // namespace
}  // namespace rlf

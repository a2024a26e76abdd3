// rlf bench train (bench/train_bench.h): the report's fields and arithmetic on
// the smallest shape, the loss of a fresh model against ln(V), and the exact
// option errors.
#include <gtest/gtest.h>

#include <cmath>

#include "bench/train_bench.h"
#include "model/config.h"
#include "util/error.h"

namespace rlf {
namespace {

TrainBenchOptions tiny(const std::string& dtype) {
  TrainBenchOptions o;
  o.shape = "stories260K";
  o.batch = 2;
  o.seq = 16;
  o.dtype = dtype;
  o.steps = 3;
  o.warmup = 1;
  return o;
}

std::string error_of(const TrainBenchOptions& o) {
  try {
    run_train_bench(o);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

void expect_sane_report(const Json& j, const std::string& dtype) {
  const ModelConfig c = ModelConfig::preset("stories260K");
  EXPECT_EQ(j.at("shape"), "stories260K");
  EXPECT_EQ(j.at("dtype"), dtype);
  EXPECT_EQ(j.at("batch"), 2);
  EXPECT_EQ(j.at("seq"), 16);
  EXPECT_EQ(j.at("tokens_per_step"), 32);
  EXPECT_EQ(j.at("params").get<int64_t>(), c.n_params());
  EXPECT_EQ(j.at("ms_per_step_all").size(), 3u);
  const double ms = j.at("ms_per_step").get<double>();
  EXPECT_GT(ms, 0.0);
  EXPECT_NEAR(j.at("tokens_per_s").get<double>(), 32.0 / (ms / 1e3), 1e-6);
  EXPECT_LE(j.at("ms_per_step_min").get<double>(), ms);
  EXPECT_GE(j.at("ms_per_step_max").get<double>(), ms);
  for (const char* phase : {"forward_ms", "backward_ms", "optimizer_ms"}) {
    EXPECT_GT(j.at(phase).get<double>(), 0.0) << phase;
    EXPECT_LE(j.at(phase).get<double>(), j.at("ms_per_step_max").get<double>()) << phase;
  }
  // Weights ~ N(0, 0.02): logits are nearly uniform, so the NLL of random
  // targets is ln(V) = ln 512 = 6.238 to within a few hundredths.
  EXPECT_NEAR(j.at("loss_first").get<double>(), std::log(512.0), 0.05);
  EXPECT_NEAR(j.at("loss_last").get<double>(), std::log(512.0), 0.05);
}

TEST(TrainBench, Fp32ReportOnTinyShape) { expect_sane_report(run_train_bench(tiny("fp32")), "fp32"); }

TEST(TrainBench, Bf16WithMasterWeights) {
  Json j = run_train_bench(tiny("bf16"));
  expect_sane_report(j, "bf16");
  EXPECT_EQ(j.at("precision"), "bf16 forward/backward, fp32 master weights and moments");
}

TEST(TrainBench, OptionErrors) {
  auto o = tiny("fp32");
  o.batch = 0;
  EXPECT_EQ(error_of(o), "bench train: --batch must be > 0, got 0");
  o = tiny("fp32");
  o.steps = 0;
  EXPECT_EQ(error_of(o), "bench train: --steps must be > 0, got 0");
  o = tiny("fp16");
  EXPECT_EQ(error_of(o), "bench train: --dtype must be fp32 or bf16, got 'fp16'");
  o = tiny("fp32");
  o.seq = 513;
  EXPECT_EQ(error_of(o), "bench train: --seq 513 exceeds the model's context (512)");
  o = tiny("fp32");
  o.shape = "stories1B";
  EXPECT_EQ(error_of(o).rfind("unknown model shape 'stories1B'", 0), 0u) << error_of(o);
}

}  // namespace
}  // namespace rlf

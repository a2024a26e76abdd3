// The CUDA path, on a machine with an NVIDIA GPU (label "device"; every test
// skips with a visible message where torch::cuda::is_available() is false,
// and fails instead when RLF_REQUIRE_CUDA=1, so a GPU run cannot skip):
//  - tiny random Llama / Llama-3 / Qwen2 / Mistral models saved by
//    transformers give rlf's fp32 logits on the GPU equal to transformers' on
//    the GPU and on the CPU; bf16 stays close;
//  - llama2.c's stories260K decodes greedily on the GPU to run.c's story;
//  - the rollout engine's log-probs on the GPU equal the trainer's forward on
//    the GPU and on the CPU;
//  - a GRPO run on the GPU trains (parameters move, the trainer reproduces
//    the rollout's log-probs every step) and N steps straight equal N/2 +
//    resume + N/2; a bf16 run trains too.
// Built by scripts/build-cuda.sh; see docs/benchmarks.md "CUDA on an NVIDIA H200" for how it was run.
#include <gtest/gtest.h>
#include <unistd.h>
#include <torch/cuda.h>

#include <cstdlib>
#include <fstream>

#include "model/loader.h"
#include "rollout/engine.h"
#include "rollout/policy.h"
#include "tests/model/oracle_logits.h"
#include "tests/rollout/stories260k_fixture.h"
#include "tests/support/test_env.h"
#include "tests/train/run_fixtures.h"
#include "config/config_schema.h"
#include "train/micro_batch.h"
#include "train/train_run.h"
#include "util/json_util.h"

#define RLF_REQUIRE_CUDA()                                                                          \
  do {                                                                                              \
    if (!torch::cuda::is_available()) {                                                             \
      const char* req = std::getenv("RLF_REQUIRE_CUDA");                                            \
      if (req && std::string(req) == "1") FAIL() << "RLF_REQUIRE_CUDA=1 but this build/machine has no CUDA"; \
      GTEST_SKIP() << "no CUDA device (a CPU build or no GPU): the CUDA path is not exercised here";   \
    }                                                                                               \
  } while (0)

namespace rlf {
namespace {

using test::json_to_tensor;

std::string oracle(const std::string& args) {
  return test::shell_quote(test::oracle_python()) + " " +
         test::shell_quote(test::source_path("tests/oracle/hf_tiny_models.py").string()) + " " + args;
}

class CudaHfOracle : public ::testing::TestWithParam<std::string> {};

TEST_P(CudaHfOracle, LogitsOnTheGpuMatchTransformersOnTheGpu) {
  RLF_REQUIRE_CUDA();
  RLF_REQUIRE_ORACLE();
  test::TempDir dir;
  const std::string kind = GetParam();
  auto made = test::run_command(oracle("make " + kind + " " + test::shell_quote((dir / "hf").string())));
  ASSERT_EQ(made.exit_code, 0) << made.output;
  Json ref = read_json_file((dir / "hf/oracle_logits.json").string());
  std::ofstream(dir / "ids.json") << ref["ids"].dump();
  auto gpu = test::run_command(oracle("logits " + test::shell_quote((dir / "hf").string()) + " " +
                                      test::shell_quote((dir / "ids.json").string()) + " " +
                                      test::shell_quote((dir / "gpu.json").string()) + " cuda"));
  ASSERT_EQ(gpu.exit_code, 0) << gpu.output;
  const auto ids = json_to_tensor(ref["ids"]).to(torch::kInt64);
  const auto cpu_expected = json_to_tensor(ref["logits"]);
  const auto gpu_expected = json_to_tensor(read_json_file((dir / "gpu.json").string())["logits"]);

  LoadOptions lo;
  lo.device = "cuda";
  LoadedModel m = load_model(dir / "hf", lo);
  torch::NoGradGuard ng;
  const auto logits = m.model->forward(ids.to(torch::kCUDA)).to(torch::kCPU, torch::kFloat32);
  ASSERT_EQ(logits.sizes(), gpu_expected.sizes());
  const double err_gpu = (logits - gpu_expected).abs().max().item<double>();
  const double err_cpu = (logits - cpu_expected).abs().max().item<double>();
  EXPECT_LT(err_gpu, 1e-4) << kind << ": max |rlf(cuda) - transformers(cuda)| = " << err_gpu;
  EXPECT_LT(err_cpu, 1e-4) << kind << ": max |rlf(cuda) - transformers(cpu)| = " << err_cpu;
  std::cout << "[ cuda ] " << kind << " fp32: max |rlf - transformers| on the GPU " << err_gpu << ", vs CPU " << err_cpu
            << "\n";

  // bf16 on the GPU: rounding only (relative to the logits' range).
  lo.dtype = "bf16";
  LoadedModel b = load_model(dir / "hf", lo);
  const auto logits16 = b.model->forward(ids.to(torch::kCUDA)).to(torch::kCPU, torch::kFloat32);
  const double range = gpu_expected.abs().max().item<double>();
  const double err16 = (logits16 - gpu_expected).abs().max().item<double>();
  EXPECT_LT(err16, 0.05 * range + 0.02) << kind << ": bf16 logits off by " << err16 << " (range " << range << ")";
  std::cout << "[ cuda ] " << kind << " bf16: max |rlf - transformers fp32| " << err16 << " (logit range " << range
            << ")\n";
}

INSTANTIATE_TEST_SUITE_P(Architectures, CudaHfOracle, ::testing::Values("llama", "llama3", "qwen2", "mistral"));

TEST(Cuda, Stories260KGreedyMatchesLlama2cRunC) {
  RLF_REQUIRE_CUDA();
  LoadOptions lo;
  lo.dtype = "fp32";
  lo.device = "cuda";
  const std::string text = test::greedy_story(test::shared_path("models/stories260K/stories260K.bin"), lo);
  const std::string reference = test::kStories260KReference;
  EXPECT_EQ(text.substr(0, reference.size()), reference) << text;
}

TEST(Cuda, RolloutLogProbsEqualTheTrainersOnTheGpuAndTheCpu) {
  RLF_REQUIRE_CUDA();
  const auto path = test::shared_path("models/stories260K/stories260K.bin");
  LoadOptions lo;
  lo.device = "cuda";
  lo.dtype = "fp32";
  Policy p = load_policy(path, "", lo);
  EngineOptions eo;
  eo.eos_token_ids = p.eos_token_ids;
  eo.seed = 11;
  RolloutEngine engine(p.model(), p.tokenizer, eo);
  std::vector<GenerationRequest> requests;
  for (const char* prompt : {"Once upon a time", "The cat", "Lily and Ben went"}) {
    GenerationRequest r;
    r.prompt_ids = p.tokenizer->encode(prompt, true);
    r.n = 4;
    r.params.temperature = 1.0;
    r.params.max_new_tokens = 48;
    requests.push_back(r);
  }
  const auto out = engine.generate(requests);
  std::vector<Episode> episodes;
  for (const auto& s : out) episodes.push_back(Episode::single_turn(0, s.prompt_ids, s.completion_ids, s.logprobs));
  std::vector<const Episode*> view;
  for (const auto& e : episodes) view.push_back(&e);

  const auto on_gpu = recompute_logprobs(*p.model(), view, 5);
  LoadedModel cpu = load_model(path);
  const auto on_cpu = recompute_logprobs(*cpu.model, view, 5);
  double gap_gpu = 0, gap_cpu = 0;
  int64_t tokens = 0;
  for (size_t i = 0; i < episodes.size(); ++i) {
    const auto& e = episodes[i];
    for (size_t t = e.n_prompt; t < e.tokens.size(); ++t) {
      gap_gpu = std::max(gap_gpu, static_cast<double>(std::abs(on_gpu[i][t] - e.old_logprob[t])));
      gap_cpu = std::max(gap_cpu, static_cast<double>(std::abs(on_cpu[i][t] - e.old_logprob[t])));
      ++tokens;
    }
  }
  EXPECT_GT(tokens, 100);
  EXPECT_LT(gap_gpu, 1e-4) << "rollout (cuda) vs trainer (cuda)";
  EXPECT_LT(gap_cpu, 1e-4) << "rollout (cuda) vs trainer (cpu)";
  std::cout << "[ cuda ] " << tokens << " sampled tokens: max |rollout - trainer| log-prob " << gap_gpu
            << " on the GPU, " << gap_cpu << " against the CPU\n";
}

// The GRPO run of tests/train/test_grpo_run.cpp, on the GPU in `dtype`.
Json grpo_config(const std::filesystem::path& model, const std::filesystem::path& out, int64_t steps,
                 const std::string& dtype) {
  Json j = test::grpo_run_config(model, out, steps);
  j["model"]["device"] = "cuda";
  j["model"]["dtype"] = dtype;
  return j;
}

TEST(Cuda, GrpoRunTrainsAndResumesExactlyOnTheGpu) {
  RLF_REQUIRE_CUDA();
  test::TempDir dir;
  const auto model = test::make_tiny_model(dir);
  auto [a, b] = test::straight_and_resumed(
      [&](const std::filesystem::path& out, int64_t steps) {
        return train_config_from_json(grpo_config(model, out, steps, "fp32"), "cuda run");
      },
      dir, 4, 2, {"policy"});
  ASSERT_EQ(a.size(), 4u);
  ASSERT_EQ(b.size(), 4u);
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i]["reward/mean"], b[i]["reward/mean"]) << "step " << i + 1;
    EXPECT_LT(a[i]["policy/logprob_diff_max"].get<double>(), 1e-4) << "step " << i + 1;
    // Peak CUDA memory per phase (train/phase_memory.h): the weights alone are on the device throughout.
    for (const char* phase : {"rollout", "reference", "update"})
      EXPECT_GT(a[i].value(std::string("mem/cuda_peak_mb_") + phase, 0.0), 0.0) << phase << ", step " << i + 1;
    std::cout << "[ cuda ] step " << i + 1 << ": reward " << a[i]["reward/mean"] << ", max |rollout - trainer| "
              << a[i]["policy/logprob_diff_max"] << ", peak CUDA MB (rollout, update) "
              << a[i].value("mem/cuda_peak_mb_rollout", 0.0) << ", " << a[i].value("mem/cuda_peak_mb_update", 0.0)
              << "\n";
  }
  test::expect_same_parameters(dir / "a/checkpoints/step-4/model", model, /*same=*/false);
}

TEST(Cuda, Bf16GrpoRunTrains) {
  RLF_REQUIRE_CUDA();
  test::TempDir dir;
  const auto model = test::make_tiny_model(dir);
  TrainRunOptions quiet;
  quiet.quiet = true;
  const auto summary = run_training(train_config_from_json(grpo_config(model, dir / "run", 2, "bf16"), "bf16"), quiet);
  EXPECT_EQ(summary.steps, 2);
  const auto m = read_jsonl(dir / "run/metrics.jsonl");
  ASSERT_EQ(m.size(), 2u);
  for (const auto& step : m) {
    EXPECT_TRUE(std::isfinite(step["loss"].get<double>())) << step.dump();
    // bf16 rollout vs bf16 trainer forward: same weights, same code, bf16 rounding.
    EXPECT_LT(step["policy/logprob_diff_max"].get<double>(), 0.5) << step.dump();
  }
  test::expect_same_parameters(dir / "run/checkpoints/step-2/model", model, /*same=*/false);
}

// NCCL ranks (train/c10d_reducer.cpp in a CUDA build): two ranks, one GPU
// each (cuda:LOCAL_RANK), train what one process trains on one GPU. Needs two
// GPUs: NCCL refuses two ranks on one device, so with fewer it skips, saying so.
TEST(Cuda, NcclRanksTrainWhatOneProcessTrains) {
  RLF_REQUIRE_CUDA();
  const int64_t gpus = static_cast<int64_t>(torch::cuda::device_count());
  if (gpus < 2) GTEST_SKIP() << "NCCL ranks need 2 GPUs (one per rank); this machine has " << gpus;
  test::TempDir dir;
  const auto model = test::make_tiny_model(dir);
  std::ofstream(dir / "c.toml") << "[model]\npath = \"" << model.string() << "\"\ndevice = \"cuda\"\n"
      "[data]\npreset = \"arithmetic\"\neval_size = 4\n[data.arithmetic]\nn_problems = 40\n"
      "[[reward]]\ntype = \"math\"\nanswer_format = \"gsm8k\"\n"
      "[rollout]\nprompts_per_step = 4\ngroup_size = 3\nmax_new_tokens = 8\n"
      "[algorithm]\nmicro_batch_size = 4\n[optim]\nlr = 0.001\n[run]\nseed = 5\nsteps = 3\n"
      "[dist]\ncheck_every = 1\ntimeout_s = 120\n";
  const std::string rlf = test::shell_quote(test::binary_path("apps/cli/rlf").string());
  const std::string cfg = test::shell_quote((dir / "c.toml").string());
  auto one = test::run_command(rlf + " train " + cfg + " --quiet --set run.out_dir=" +
                               test::shell_quote((dir / "one").string()));
  ASSERT_EQ(one.exit_code, 0) << one.output;
  const int port = 29500 + static_cast<int>(::getpid() % 2000);
  std::string ranks;
  for (int r = 0; r < 2; ++r)
    ranks += "RANK=" + std::to_string(r) + " WORLD_SIZE=2 LOCAL_RANK=" + std::to_string(r) +
             " LOCAL_WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=" + std::to_string(port) + " " + rlf + " train " +
             cfg + " --quiet --set run.out_dir=" + test::shell_quote((dir / "two").string()) + " & p" +
             std::to_string(r) + "=$!; ";
  auto two = test::run_command("sh -c " + test::shell_quote(ranks + "wait $p0 && wait $p1"));
  ASSERT_EQ(two.exit_code, 0) << two.output;
  const auto m1 = read_jsonl(dir / "one/metrics.jsonl"), m2 = read_jsonl(dir / "two/metrics.jsonl");
  ASSERT_EQ(m1.size(), 3u);
  ASSERT_EQ(m2.size(), 3u);
  EXPECT_EQ(m1[0]["reward/mean"], m2[0]["reward/mean"]);
  EXPECT_EQ(m2[0]["dist/world_size"], 2);
  LoadedModel a = load_model(dir / "one/checkpoints/step-3/model"), b = load_model(dir / "two/checkpoints/step-3/model");
  auto pb = b.model->named_parameters();
  double diff = 0;
  for (const auto& p : a.model->named_parameters())
    diff = std::max(diff, (p.value() - pb[p.key()]).abs().max().item<double>());
  std::cout << "[ cuda ] NCCL: 1 GPU vs 2 ranks on 2 GPUs, 3 steps: max |weight difference| = " << diff << "\n";
  EXPECT_LT(diff, 1e-3);
}

}  // namespace
}  // namespace rlf

// The memory levers as run keys ([trainer] logprob_recompute,
// checkpoint_activations; model/memory_levers.h): a tiny GRPO run with each
// lever forced on trains as it does with both off (checkpointing bit for
// bit, recomputed log-probs to float rounding), the metrics say what the
// levers did and each phase's peak memory, and a bad value names its key.
#include <gtest/gtest.h>

#include <cmath>

#include "tests/support/test_env.h"
#include "tests/train/run_fixtures.h"
#include "model/flops.h"
#include "model/loader.h"
#include "model/lora.h"
#include "train/memory_plan.h"
#include "train/metrics.h"
#include "train/perf_metrics.h"
#include "train/train_run.h"

namespace rlf {
namespace {

std::vector<Json> run_with(const std::filesystem::path& model, const std::filesystem::path& out,
                           const std::string& recompute, const std::string& checkpoint) {
  Json j = test::grpo_run_config(model, out, 2);
  j["trainer"]["logprob_recompute"] = recompute;
  j["trainer"]["checkpoint_activations"] = checkpoint;
  run_training(train_config_from_json(j, "levers"), test::quiet_run());
  return read_jsonl(out / "metrics.jsonl");
}

TEST(MemoryLeversRun, EachLeverTrainsAsWithoutItAndSaysWhatItDid) {
  test::TempDir dir;
  const auto model = test::make_tiny_model(dir);
  const auto off = run_with(model, dir / "off", "off", "none");
  const auto ckpt = run_with(model, dir / "ckpt", "off", "layers");
  const auto rec = run_with(model, dir / "rec", "on", "none");
  ASSERT_EQ(off.size(), 2u);
  ASSERT_EQ(ckpt.size(), 2u);
  ASSERT_EQ(rec.size(), 2u);
  for (size_t s = 0; s < 2; ++s) {
    EXPECT_EQ(off[s]["mem/checkpointed_forwards"], 0);
    EXPECT_EQ(off[s]["mem/recomputed_logprob_calls"], 0);
    EXPECT_GT(ckpt[s]["mem/checkpointed_forwards"].get<int64_t>(), 0);
    EXPECT_EQ(ckpt[s]["mem/recomputed_logprob_calls"], 0);
    EXPECT_GT(rec[s]["mem/recomputed_logprob_calls"].get<int64_t>(), 0);
    EXPECT_EQ(rec[s]["mem/checkpointed_forwards"], 0);
    for (const char* phase : {"mem/rss_peak_mb_rollout", "mem/rss_peak_mb_reference", "mem/rss_peak_mb_update"})
      EXPECT_GT(off[s].value(phase, 0.0), 10.0) << phase;
    for (const char* perf : {"perf/peak_gflops", "perf/mfu_fwd_bwd", "perf/mfu_wall", "perf/update_tokens_per_s"})
      EXPECT_GT(off[s].value(perf, 0.0), 0.0) << perf;
    // The step's phases, each timed on its own: they fit in the step.
    ASSERT_TRUE(off[s].contains("time/logprobs_s"));
    const double phases = off[s]["time/rollout_s"].get<double>() + off[s]["time/logprobs_s"].get<double>() +
                          off[s]["time/update_s"].get<double>();
    EXPECT_GE(off[s]["time/logprobs_s"].get<double>(), 0.0);
    EXPECT_LE(phases, off[s]["time/step_s"].get<double>());
    // The rollout's engine parts fit in the rollout (sampling inside decoding).
    const double prefill = off[s]["time/rollout_prefill_s"].get<double>(),
                 decode = off[s]["time/rollout_decode_s"].get<double>(),
                 sample = off[s]["time/rollout_sample_s"].get<double>(),
                 pack = off[s]["time/rollout_pack_s"].get<double>();
    EXPECT_GT(prefill, 0.0);
    EXPECT_GT(decode, 0.0);
    EXPECT_GT(sample, 0.0);
    EXPECT_GE(pack, 0.0);
    EXPECT_LE(sample, decode);
    EXPECT_LE(prefill + decode + pack, off[s]["time/rollout_s"].get<double>());
    // Checkpointing recomputes the same kernels on the same shapes: the same numbers.
    EXPECT_EQ(ckpt[s]["loss/policy"], off[s]["loss/policy"]) << "step " << s + 1;
    EXPECT_EQ(ckpt[s]["reward/mean"], off[s]["reward/mean"]) << "step " << s + 1;
    // Recomputed chunks round differently: close, not equal.
    EXPECT_NEAR(rec[s]["loss/policy"].get<double>(), off[s]["loss/policy"].get<double>(), 1e-5) << "step " << s + 1;
  }
  test::expect_same_parameters(dir / "off/checkpoints/step-2/model", dir / "ckpt/checkpoints/step-2/model");
}

// The reference model's pass is timed as the step's log-prob phase.
TEST(MemoryLeversRun, TheReferencePassIsTimedAsTheLogprobPhase) {
  test::TempDir dir;
  const auto model = test::make_tiny_model(dir);
  Json j = test::grpo_run_config(model, dir / "kl", 1);
  j["algorithm"]["kl_beta"] = 0.1;
  run_training(train_config_from_json(j, "kl"), test::quiet_run());
  const auto m = read_jsonl(dir / "kl" / "metrics.jsonl");
  ASSERT_EQ(m.size(), 1u);
  EXPECT_GT(m[0].value("time/logprobs_s", 0.0), 0.0);
  EXPECT_LT(m[0].value("time/logprobs_s", 0.0), m[0].value("time/step_s", 0.0));
}

TEST(MemoryLeversRun, ABadValueNamesItsKey) {
  test::TempDir dir;
  Json j = test::grpo_run_config(dir / "m", dir / "o", 1);
  j["trainer"]["checkpoint_activations"] = "all";
  const std::string e = test::error_of([&] { train_config_from_json(j, "c.toml"); });
  EXPECT_NE(e.find("trainer.checkpoint_activations"), std::string::npos) << e;
  EXPECT_NE(e.find("auto, none, layers"), std::string::npos) << e;
  j = test::grpo_run_config(dir / "m", dir / "o", 1);
  j["trainer"]["checkpoint_every"] = 0;
  EXPECT_NE(test::error_of([&] { train_config_from_json(j, "c.toml"); }).find("trainer.checkpoint_every"),
            std::string::npos);
}

// The dry run's parameter counts against the models rlf builds, and its plan
// moving the way each lever moves it.
TEST(MemoryPlan, CountsMatchTheModelsAndEachLeverLowersItsPart) {
  for (const char* arch : {"Qwen2ForCausalLM", "LlamaForCausalLM", "Qwen3ForCausalLM"}) {
    Json j = {{"vocab_size", 96},   {"hidden_size", 48},           {"intermediate_size", 80},
              {"num_hidden_layers", 3}, {"num_attention_heads", 4}, {"num_key_value_heads", 2},
              {"max_position_embeddings", 64}, {"tie_word_embeddings", std::string(arch) == "Qwen2ForCausalLM"},
              {"architectures", {arch}}};
    const ModelConfig c = ModelConfig::from_hf_json(j, arch);
    CausalLM m = make_random_model(c, 1, torch::kFloat32, torch::kCPU);
    int64_t n = 0;
    for (const auto& p : m->parameters()) n += p.numel();
    // Exact but for per-head norms some families add (Qwen 3's q/k norms: 2 x head_dim per layer).
    EXPECT_NEAR(static_cast<double>(count_parameters(c)), static_cast<double>(n), 0.01 * n) << arch;
    LoraOptions lo;
    lo.rank = 3;
    lo.targets = {"q_proj", "k_proj", "down_proj"};
    add_lora(*m, lo, 2);
    int64_t lora = 0;
    for (const auto& p : m->named_parameters())
      if (p.key().find("lora_") != std::string::npos) lora += p.value().numel();
    EXPECT_EQ(count_lora_parameters(c, lo), lora) << arch;
  }
  // A Qwen2.5-0.5B-shaped plan: 494 M parameters, vocabulary 151,936.
  const ModelConfig q = ModelConfig::from_hf_json(
      {{"vocab_size", 151936}, {"hidden_size", 896}, {"intermediate_size", 4864}, {"num_hidden_layers", 24},
       {"num_attention_heads", 14}, {"num_key_value_heads", 2}, {"max_position_embeddings", 32768},
       {"tie_word_embeddings", true}, {"attention_bias", true}, {"architectures", {"Qwen2ForCausalLM"}}},
      "qwen");
  EXPECT_NEAR(count_parameters(q) / 1e6, 494.0, 1.0);
  test::TempDir dir;
  Json j = test::grpo_run_config(dir / "m", dir / "o", 1);
  j["trainer"]["logprob_recompute"] = "off";
  j["trainer"]["checkpoint_activations"] = "none";
  j["algorithm"]["micro_batch_size"] = 4;
  TrainConfig cfg = train_config_from_json(j, "plan");
  const int64_t usable = int64_t{64} << 30;
  auto part = [](const MemoryPlan& p, const std::string& name) {
    for (const auto& x : p.parts)
      if (x.name == name) return x.mb;
    ADD_FAILURE() << name;
    return 0.0;
  };
  const MemoryPlan base = plan_memory(cfg, q, usable, 384);
  EXPECT_EQ(base.seq_len, 384 + cfg.rl.sampling.max_new_tokens);
  {  // a token budget plans its worst case: the full-length sequences it holds
    TrainConfig budget = cfg;
    budget.trainer.micro_batch_tokens = 3 * base.seq_len + 5;
    EXPECT_EQ(plan_memory(budget, q, usable, 384).micro_batch, 3);
    budget.trainer.micro_batch_tokens = 10;
    EXPECT_EQ(plan_memory(budget, q, usable, 384).micro_batch, 1);
  }
  EXPECT_NEAR(part(base, "weights"), 494e6 * 4 / 1e6, 10);
  EXPECT_NEAR(part(base, "optimizer"), 2 * part(base, "gradients"), 1e-6);
  TrainConfig on = cfg;
  on.memory.logprob_recompute = LeverMode::On;
  on.memory.checkpoint = CheckpointMode::Layers;
  const MemoryPlan levers = plan_memory(on, q, usable, 384);
  EXPECT_LT(part(levers, "log-probs"), part(base, "log-probs") / 4);
  EXPECT_LT(part(levers, "activations"), part(base, "activations") / 4);
  EXPECT_EQ(part(levers, "weights"), part(base, "weights"));
  on.lora.enabled = true;
  EXPECT_LT(part(plan_memory(on, q, usable, 384), "optimizer"), part(base, "optimizer") / 50);
  // The advice: nothing when it fits, else the levers first, ending under the limit when anything can.
  EXPECT_TRUE(memory_advice(cfg, q, 1e9, usable, 384).empty());
  const auto advice = memory_advice(cfg, q, levers.peak_mb() + 1, usable, 384);
  ASSERT_EQ(advice.size(), 1u);
  EXPECT_NE(advice[0].find("trainer.checkpoint_activations=layers"), std::string::npos) << advice[0];
  const auto more = memory_advice(cfg, q, 2000, usable, 384);
  ASSERT_GE(more.size(), 3u);
  EXPECT_NE(more[1].find("lora.enabled=true"), std::string::npos) << more[1];
  EXPECT_NE(more[2].find("model.dtype=bf16"), std::string::npos) << more[2];
}

// A small Llama shape (vocabulary 1,000, hidden 64, 3 layers, untied
// classifier) whose FLOPs the tests below write out by hand.
ModelConfig flops_config() {
  return ModelConfig::from_hf_json(
      {{"vocab_size", 1000}, {"hidden_size", 64}, {"intermediate_size", 160}, {"num_hidden_layers", 3},
       {"num_attention_heads", 4}, {"num_key_value_heads", 2}, {"max_position_embeddings", 512},
       {"tie_word_embeddings", false}, {"architectures", {"LlamaForCausalLM"}}},
      "flops");
}

// Model FLOPs: 2 per weight per token forward (the 6·N·T rule for training)
// plus attention's 4·D_q·L per token per key, counted independently here.
TEST(ModelFlops, TwoPerWeightPerTokenPlusAttention) {
  const ModelConfig c = flops_config();
  // Weights that multiply every token: all but the embedding table and the norms.
  const double matmul_weights = static_cast<double>(count_parameters(c)) - 1000.0 * 64 - (2 * 3 + 1) * 64;
  const double attention = 3 * 4.0 * 64 * 50;  // mean length 100: 50 keys on average
  EXPECT_NEAR(forward_flops(c, 7, 100), 7 * (2 * matmul_weights + attention), 1e-6);
  EXPECT_NEAR(training_flops(c, 7, 100, true), 3 * forward_flops(c, 7, 100), 1e-6);
  EXPECT_NEAR(training_flops(c, 7, 100, false), 2 * forward_flops(c, 7, 100), 1e-6);
  // Log-probs over kept sets: the classifier computes 51 rows per token, not the 1,000 of the vocabulary.
  EXPECT_NEAR(forward_flops(c, 7, 100, 51), 7 * (2 * (matmul_weights - (1000 - 51) * 64.0) + attention), 1e-6);
  EXPECT_NEAR(training_flops(c, 7, 100, true, 51), 3 * forward_flops(c, 7, 100, 51), 1e-6);
  const double peak = measure_matmul_peak(torch::kFloat32, 128, 2);  // a rate: only its sign is machine-independent
  EXPECT_TRUE(std::isfinite(peak) && peak > 0) << peak;
}

// The step's MFU counts the classifier rows each pass computes: none before
// an episode's first loss-weighted token (the prompt), the vocabulary after
// it, and over kept sets the kept ids and the target where a token has a set.
TEST(StepPerfMetrics, CountTheClassifierRowsEachPassComputes) {
  const ModelConfig c = flops_config();
  // A 4-token prompt and 6 policy tokens, the first 5 with a kept set of 3
  // ids and the sixth with none (its ids all -1); and an episode no loss reads.
  Episode a, b;
  a.tokens.assign(10, 1);
  a.loss_weight = {0, 0, 0, 0, 1, 1, 1, 1, 1, 1};
  a.sampling_mask_id.assign(30, -1);
  for (int t = 4; t < 9; ++t)
    for (int j = 0; j < 3; ++j) a.sampling_mask_id[t * 3 + j] = 7 + j;
  b.tokens.assign(5, 1);
  b.loss_weight.assign(5, 0.0f);
  const std::vector<Episode> episodes{a, b};
  // Per token: the projections (every weight but the embedding table, the
  // norms and the 1,000 x 64 classifier) and attention over 3.75 keys on
  // average (mean length 7.5); the classifier's rows counted apart.
  const double body = static_cast<double>(count_parameters(c)) - 2 * 1000.0 * 64 - (2 * 3 + 1) * 64;
  const double attention = 3 * 4.0 * 64 * 3.75;
  auto forward = [&](double classifier_rows) { return 15 * (2 * body + attention) + 2 * classifier_rows * 64; };
  const double update_kept = 3 * forward(5 * 4 + 1000), update_all = 3 * forward(6 * 1000);
  const double sampled = forward(6 * 1000), reference = forward(6 * 1000);
  for (const bool kept : {true, false}) {
    StepPerf perf{c, 1e9, true, true, 1, kept};
    Json m = {{"time/update_s", 2.0}, {"time/step_s", 4.0}, {"rollout/generated_tokens", 6}};
    perf.add_metrics(episodes, m);
    const double update = kept ? update_kept : update_all;
    EXPECT_NEAR(m["perf/mfu_fwd_bwd"].get<double>(), update / 2e9, 1e-12) << kept;
    EXPECT_NEAR(m["perf/mfu_wall"].get<double>(), (update + sampled + reference) / 4e9, 1e-12) << kept;
    EXPECT_DOUBLE_EQ(m["perf/peak_gflops"].get<double>(), 1.0);
    EXPECT_DOUBLE_EQ(m["perf/update_tokens_per_s"].get<double>(), 7.5);
  }
}

}  // namespace
}  // namespace rlf

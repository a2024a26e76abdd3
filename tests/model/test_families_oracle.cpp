// Every decoder family and RoPE scaling against today's transformers (5.x)
// and peft on today's torch (the peer environment, scripts/peer_venv.sh;
// tests/oracle/hf_families.py builds the random models, one Python process
// for all of them). Per model: rlf's fp32 logits within 1e-4 of
// transformers' on both paths (the fp32 CPU fast path and the module path),
// also for a short forward (longrope's short factors, a window longer than
// the sequence); greedy continuations with a KV cache identical on both
// paths; bf16 logits (module path) as close to transformers' bf16 as that is
// to its own fp32; rlf's saved directory (sharded for one model) loading in
// transformers with the same logits; peft's LoRA adapter giving peft's
// logits in rlf (unmerged on both paths, and merged), and rlf's adapter
// loading in peft with rlf's logits.
#include <gtest/gtest.h>

#include "model/loader.h"
#include "model/lora.h"
#include "tests/model/oracle_logits.h"
#include "tests/support/tensors.h"
#include "tests/support/test_env.h"
#include "util/json_util.h"

namespace rlf {
namespace {

using test::max_diff;

using test::json_to_tensor;

// The models of tests/oracle/hf_families.py (MODELS) and the config class transformers reads back.
const std::vector<std::pair<std::string, std::string>> kModels = {
    {"qwen3", "Qwen3Config"},           {"gemma2", "Gemma2Config"},       {"gemma3", "Gemma3TextConfig"},
    {"phi4mini", "Phi3Config"},         {"phi3", "Phi3Config"},           {"smollm3", "SmolLM3Config"},
    {"olmo2", "Olmo2Config"},           {"llama_linear", "LlamaConfig"},  {"llama_dynamic", "LlamaConfig"},
    {"llama_yarn", "LlamaConfig"},      {"llama3", "LlamaConfig"},        {"mistral", "MistralConfig"},
    {"qwen2", "Qwen2Config"}};

std::string oracle_script() { return test::source_path("tests/oracle/hf_families.py").string(); }

// Greedy continuation of `prompt` by `n` tokens with a KV cache (prefill, then one token per step).
std::vector<int64_t> greedy(CausalLMImpl& m, const std::vector<int64_t>& prompt, int64_t n) {
  torch::NoGradGuard ng;
  const int64_t P = static_cast<int64_t>(prompt.size());
  KVCache cache(m.config(), 1, P + n, m.dtype(), m.device());
  auto ids = torch::tensor(prompt, torch::kInt64).view({1, P});
  auto logits = m.logits(m.forward_hidden(ids, torch::arange(P, torch::kInt64).view({1, P}), &cache));
  std::vector<int64_t> out;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t tok = logits.select(1, logits.size(1) - 1).argmax(-1).item<int64_t>();
    out.push_back(tok);
    logits = m.logits(m.forward_hidden(torch::full({1, 1}, tok, torch::kInt64),
                                       torch::full({1, 1}, P + i, torch::kInt64), &cache));
  }
  return out;
}

// Logits [B, T, V] of `ids` [B, T] in fp32.
torch::Tensor logits_of(CausalLMImpl& m, const torch::Tensor& ids) {
  torch::NoGradGuard ng;
  return m.forward(ids).to(torch::kFloat32);
}

void check_model(const std::filesystem::path& dir, const std::string& name) {
  const Json ref = read_json_file((dir / "ref.json").string());
  const auto ids = json_to_tensor(ref["ids"]).to(torch::kInt64);
  const auto expected = json_to_tensor(ref["logits"]);
  const auto expected_short = json_to_tensor(ref["logits_short"]);
  const auto short_ids = ids.narrow(1, 0, expected_short.size(1));

  LoadedModel m = load_model(dir / "hf");
  EXPECT_EQ(m.config.architecture, m.config.family().causal_arch);
  // fp32: both paths, the full and the short forward, and greedy decoding with a cache.
  const auto prompt = ref["prompt"].get<std::vector<int64_t>>();
  const auto want_greedy = ref["greedy"].get<std::vector<int64_t>>();
  const auto margins = ref["margins"].get<std::vector<double>>();
  for (const bool fast : {true, false}) {
    const char* path = fast ? "fast path" : "module path";
    m.model->set_fast_cpu_path(fast);
    EXPECT_LT(max_diff(logits_of(*m.model, ids), expected), 1e-4) << path;
    EXPECT_LT(max_diff(logits_of(*m.model, short_ids), expected_short), 1e-4) << path << " (short)";
    const auto got = greedy(*m.model, prompt, static_cast<int64_t>(want_greedy.size()));
    // Tokens after a near-tie (top-2 margin below 1e-4) may legitimately differ: compare up to it.
    for (size_t i = 0; i < want_greedy.size(); ++i) {
      ASSERT_EQ(got[i], want_greedy[i]) << path << " greedy step " << i;
      if (margins[i] < 1e-4) break;
    }
  }
  m.model->set_fast_cpu_path(true);

  // bf16 (module path): as accurate against the fp32 logits as transformers' bf16 is, and close to
  // transformers' bf16. Two bf16 computations round different partial sums (the order depends on the CPU's
  // kernels: AVX-512 BF16 or AVX2), so they can be up to the sum of their two errors apart, not within one.
  {
    LoadOptions lo;
    lo.dtype = "bf16";
    LoadedModel b = load_model(dir / "hf", lo);
    EXPECT_FALSE(b.model->fast_cpu_path_applies());
    const auto hf_bf16 = json_to_tensor(ref["logits_bf16"]);
    const auto ours = logits_of(*b.model, ids);
    const double hf_own = max_diff(hf_bf16, expected), own = max_diff(ours, expected);
    const double apart = max_diff(ours, hf_bf16);
    EXPECT_LT(own, std::max(0.05, 2.0 * hf_own)) << name << ": rlf's bf16 vs fp32 (transformers' bf16: " << hf_own
                                                  << ")";
    EXPECT_LT(apart, std::max(0.05, 3.0 * hf_own)) << name << ": rlf's bf16 vs transformers' bf16 (transformers' "
                                                    << "bf16 vs its fp32: " << hf_own << ")";
  }

  // Save (one model in shards) for the check phase.
  SaveOptions so;
  if (name == "gemma2") so.max_shard_bytes = 40000;
  save_model(*m.model, dir / "saved", so);
  EXPECT_EQ(std::filesystem::exists(dir / "saved/model.safetensors.index.json"), name == "gemma2");

  // peft's adapter in rlf: unmerged (both paths) and merged.
  LoadedModel a = load_model(dir / "hf");
  load_lora_adapter(*a.model, dir / "adapter");
  const auto peft_logits = json_to_tensor(ref["peft_logits"]);
  for (const bool fast : {true, false}) {
    a.model->set_fast_cpu_path(fast);
    EXPECT_LT(max_diff(logits_of(*a.model, ids), peft_logits), 1e-4) << "peft adapter, fast " << fast;
  }
  set_lora_merged_inference(*a.model, true);
  EXPECT_LT(max_diff(logits_of(*a.model, ids), peft_logits), 1e-4) << "peft adapter, merged";
  set_lora_merged_inference(*a.model, false);
  // rlf's own adapter: peft's moved a little, saved for peft to load.
  {
    torch::NoGradGuard ng;
    for (auto& p : a.model->named_parameters())
      if (p.key().find(".lora_B.") != std::string::npos) p.value().add_(0.05 * torch::randn_like(p.value()));
  }
  save_lora_adapter(*a.model, dir / "rlf_adapter", (dir / "hf").string());
  const auto mine = logits_of(*a.model, ids);
  EXPECT_GT(max_diff(mine, peft_logits), 1e-4);  // the move changed the function
  torch::save(mine, (dir / "rlf_lora.pt").string());
}

TEST(FamiliesOracle, EveryFamilyMatchesTransformersAndPeft) {
  RLF_REQUIRE_PEER();
  // Tiny models: LibTorch's OpenMP threads would only spin against each other (and the oracle's).
  const int threads = at::get_num_threads();
  at::set_num_threads(1);
  struct Restore {
    int n;
    ~Restore() { at::set_num_threads(n); }
  } restore{threads};
  test::TempDir dir;
  auto made = test::run_command(test::shell_quote(test::peer_python()) + " " + test::shell_quote(oracle_script()) +
                                " make " + test::shell_quote(dir.path().string()));
  ASSERT_EQ(made.exit_code, 0) << made.output;
  for (const auto& [name, cls] : kModels) {
    SCOPED_TRACE(name);
    check_model(dir / name, name);
  }
  // transformers on rlf's saved directories, peft on rlf's adapters: one process.
  auto checked = test::run_command(test::shell_quote(test::peer_python()) + " " + test::shell_quote(oracle_script()) +
                                   " check " + test::shell_quote(dir.path().string()));
  ASSERT_EQ(checked.exit_code, 0) << checked.output;
  for (const auto& [name, cls] : kModels) {
    SCOPED_TRACE(name);
    const Json ref = read_json_file((dir / name / "ref.json").string());
    const Json back = read_json_file((dir / name / "check.json").string());
    EXPECT_EQ(back["config_type"], cls);
    EXPECT_LT(max_diff(json_to_tensor(back["saved_logits"]), json_to_tensor(ref["logits"])), 1e-5)
        << "transformers on rlf's saved directory";
    torch::Tensor mine;
    torch::load(mine, (dir / name / "rlf_lora.pt").string());
    EXPECT_LT(max_diff(json_to_tensor(back["peft_logits"]), mine), 1e-4) << "peft on rlf's adapter";
  }
}

}  // namespace
}  // namespace rlf

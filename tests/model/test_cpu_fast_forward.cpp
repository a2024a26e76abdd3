// The fp32 CPU inference path (model/cpu_fast_forward.cpp) against the module
// path on the same weights: with a KV cache (prefill, then ragged decoding),
// without one (padding masked by key_mask), with biases, grouped-query
// attention and an explicit head_dim; and which path runs when. The module
// path and the fast path are each checked against transformers in
// test_transformer_oracle.cpp.
#include <gtest/gtest.h>

#include <map>

#include "algorithms/entropy.h"
#include "model/cpu_fast_forward.h"
#include "model/cpu_kernels.h"
#include "model/loader.h"
#include "util/error.h"
#include "tests/support/tensors.h"

namespace rlf {
namespace {

using test::max_diff;

// A tiny model exercising every branch: GQA (G = 2), q/k/v/o and MLP biases
// (random, not zero), head_dim != hidden / heads, untied lm_head.
CausalLM odd_model(uint64_t seed) {
  ModelConfig c = ModelConfig::preset("stories260K");
  c.hidden_size = 48;
  c.num_attention_heads = 4;
  c.num_key_value_heads = 2;
  c.head_dim = 16;
  c.intermediate_size = 80;
  c.num_hidden_layers = 3;
  c.attention_bias = true;
  c.o_bias = true;
  c.mlp_bias = true;
  c.tie_word_embeddings = false;
  c.rope_theta = 500000.0;
  auto m = make_random_model(c, seed, torch::kFloat32, torch::kCPU);
  torch::NoGradGuard ng;
  auto gen = at::detail::createCPUGenerator(seed + 100);
  for (auto& p : m->named_parameters()) {
    const std::string& n = p.key();
    if (n.size() > 5 && n.substr(n.size() - 5) == ".bias") p.value().copy_(at::normal(0.0, 0.1, p.value().sizes(), gen));
    if (n.find("norm") != std::string::npos) p.value().copy_(1.0 + at::normal(0.0, 0.1, p.value().sizes(), gen));
  }
  return m;
}

// A small model of each family (model/architecture.h) with its distinctive
// choices on: per-head or whole q/k norms, sandwich or post norms (Gemma's
// 1 + w), GeGLU, scaled embeddings, soft-capping, sliding windows shorter
// than the sequences below, a second RoPE table, partial rotary with
// LongRoPE, fused projections, layers without RoPE, YaRN and dynamic RoPE.
// Norms and biases random, so every parameter matters.
CausalLM family_model(const std::string& name, uint64_t seed) {
  Json j = {{"vocab_size", 96},        {"hidden_size", 48},          {"intermediate_size", 80},
            {"num_hidden_layers", 3},  {"num_attention_heads", 4},   {"num_key_value_heads", 2},
            {"max_position_embeddings", 64}, {"rms_norm_eps", 1e-6}, {"tie_word_embeddings", false}};
  if (name == "qwen3") {
    j.update({{"architectures", {"Qwen3ForCausalLM"}}, {"head_dim", 16}, {"attention_bias", true},
              {"use_sliding_window", true}, {"sliding_window", 4}, {"max_window_layers", 1},
              {"rope_parameters", {{"rope_type", "yarn"}, {"factor", 4.0}, {"rope_theta", 1e6},
                                   {"original_max_position_embeddings", 16}}}});
  } else if (name == "gemma2") {
    j.update({{"architectures", {"Gemma2ForCausalLM"}}, {"head_dim", 24}, {"query_pre_attn_scalar", 20},
              {"sliding_window", 5}, {"attn_logit_softcapping", 1.5}, {"final_logit_softcapping", 2.0},
              {"tie_word_embeddings", true}});
  } else if (name == "gemma3") {
    j.update({{"architectures", {"Gemma3ForCausalLM"}}, {"head_dim", 16}, {"query_pre_attn_scalar", 24},
              {"sliding_window", 4}, {"sliding_window_pattern", 2}, {"final_logit_softcapping", 3.0},
              {"rope_theta", 1e6}, {"rope_local_base_freq", 1e4},
              {"rope_scaling", {{"rope_type", "linear"}, {"factor", 2.0}}}});
  } else if (name == "phi4mini") {  // head_dim 64 / 4 = 16, rotary 12: 6 factors
    j.update({{"architectures", {"Phi3ForCausalLM"}}, {"hidden_size", 64}, {"partial_rotary_factor", 0.75},
              {"sliding_window", 6}, {"original_max_position_embeddings", 8}, {"tie_word_embeddings", true},
              {"rope_scaling", {{"type", "longrope"},
                                {"short_factor", {1.0, 1.2, 1.5, 2.0, 2.5, 3.0}},
                                {"long_factor", {1.0, 2.0, 3.0, 5.0, 8.0, 9.0}}}}});
  } else if (name == "smollm3") {
    j.update({{"architectures", {"SmolLM3ForCausalLM"}}, {"no_rope_layer_interval", 2}, {"attention_bias", true},
              {"mlp_bias", true}, {"rope_parameters", {{"rope_type", "dynamic"}, {"factor", 4.0},
                                                       {"rope_theta", 1e4}}}});
    j["max_position_embeddings"] = 8;  // dynamic NTK past 8 positions (up to 32)
  } else if (name == "olmo2") {
    j.update({{"architectures", {"Olmo2ForCausalLM"}}});
  } else {
    ADD_FAILURE() << "unknown family model " << name;
  }
  auto m = make_random_model(ModelConfig::from_hf_json(j, name), seed, torch::kFloat32, torch::kCPU);
  torch::NoGradGuard ng;
  auto gen = at::detail::createCPUGenerator(seed + 100);
  const double norm_base = m->config().family().norm_unit_offset ? 0.0 : 1.0;
  for (auto& p : m->named_parameters()) {
    const std::string& n = p.key();
    if (n.size() > 5 && n.substr(n.size() - 5) == ".bias") p.value().copy_(at::normal(0.0, 0.1, p.value().sizes(), gen));
    if (n.find("norm") != std::string::npos)
      p.value().copy_(norm_base + at::normal(0.0, 0.2, p.value().sizes(), gen));
    if (n.find("proj.weight") != std::string::npos) p.value().mul_(3.0);  // scores large enough for the soft-cap
  }
  return m;
}

// Runs loss.backward() from cleared gradients; every parameter's gradient by name.
std::map<std::string, torch::Tensor> gradients_of(CausalLMImpl& m, const torch::Tensor& loss) {
  for (auto& p : m.parameters()) p.mutable_grad() = torch::Tensor();
  loss.backward();
  std::map<std::string, torch::Tensor> out;
  for (auto& p : m.named_parameters()) {
    EXPECT_TRUE(p.value().grad().defined()) << p.key();
    if (p.value().grad().defined()) out[p.key()] = p.value().grad().clone();
  }
  return out;
}

// Rank-4 adapters (seed 3) on every projection the family has (Phi-3's fused
// qkv_proj and gate_up_proj included), B drawn non-zero; returns their options.
LoraOptions add_lora_everywhere(CausalLMImpl& m) {
  LoraOptions o;
  o.rank = 4;
  o.alpha = 8;
  o.targets.clear();
  for (const Projection& p : m.layer(0).projections()) o.targets.push_back(p.name);
  add_lora(m, o, 3);
  torch::NoGradGuard ng;
  for (auto& p : m.named_parameters())
    if (p.key().find(".lora_B.") != std::string::npos) p.value().normal_(0.0, 0.05);
  return o;
}

class FastPath : public ::testing::TestWithParam<std::string> {
 protected:
  CausalLM model() {
    if (GetParam() == "odd") return odd_model(5);
    if (GetParam() == "stories260K")
      return make_random_model(ModelConfig::preset("stories260K"), 5, torch::kFloat32, torch::kCPU);
    return family_model(GetParam(), 5);
  }
};

TEST_P(FastPath, CachedPrefillAndRaggedDecodeMatchModulePath) {
  CausalLM m = model();
  const ModelConfig& c = m->config();
  torch::NoGradGuard ng;
  auto ids = torch::randint(0, c.vocab_size, {3, 12}, torch::kInt64);
  std::vector<torch::Tensor> out[2];
  for (int fast = 0; fast < 2; ++fast) {
    m->set_fast_cpu_path(fast == 1);
    KVCache cache(c, 3, 32, torch::kFloat32, torch::kCPU);
    // Prefill rows with different prompt lengths one at a time (as the engine
    // does), then decode all rows together at their own positions.
    const int64_t lens[3] = {3, 7, 5};
    for (int64_t r = 0; r < 3; ++r) {
      KVCache row = cache.rows(r, 1);
      auto pos = torch::arange(lens[r], torch::kInt64).view({1, lens[r]});
      out[fast].push_back(m->logits(m->forward_hidden(ids.narrow(0, r, 1).narrow(1, 0, lens[r]), pos, &row)));
    }
    for (int64_t step = 0; step < 4; ++step) {
      auto tok = torch::empty({3, 1}, torch::kInt64), pos = torch::empty({3, 1}, torch::kInt64);
      for (int64_t r = 0; r < 3; ++r) {
        tok[r][0] = ids[r][lens[r] + step];
        pos[r][0] = lens[r] + step;
      }
      out[fast].push_back(m->logits(m->forward_hidden(tok, pos, &cache)));
    }
  }
  ASSERT_EQ(out[0].size(), out[1].size());
  for (size_t i = 0; i < out[0].size(); ++i) EXPECT_LT(max_diff(out[0][i], out[1][i]), 2e-5) << "call " << i;
  EXPECT_GT(out[0][0].abs().max().item<double>(), 1e-3);  // not a comparison of zeros
}

// Rows that read a shared prefix (one copy of a prompt, KVCache::set_prefix)
// give what rows holding the prompt in their own slots give (to rounding), on both
// paths, beside a row without a prefix; feeding a position inside the prefix
// or past the row's own slots is an error.
TEST_P(FastPath, RowsReadingASharedPrefixMatchRowsHoldingThePrompt) {
  CausalLM m = model();
  const ModelConfig& c = m->config();
  torch::NoGradGuard ng;
  const int64_t P = 7, L2 = 5, steps = 4;
  auto ids = torch::randint(0, c.vocab_size, {3, 16}, torch::kInt64);
  ids.narrow(0, 1, 1).narrow(1, 0, P).copy_(ids.narrow(0, 0, 1).narrow(1, 0, P));  // rows 0 and 1: one prompt
  for (int fast = 0; fast < 2; ++fast) {
    m->set_fast_cpu_path(fast == 1);
    auto prefill = [&](KVCache& cache, int64_t row, int64_t len) {
      KVCache view = cache.rows(row, 1);
      auto pos = torch::arange(len, torch::kInt64).view({1, len});
      return m->logits(m->forward_hidden(ids.narrow(0, row, 1).narrow(1, 0, len), pos, &view));
    };
    KVCache copies(c, 3, 16, torch::kFloat32, torch::kCPU);
    auto first = prefill(copies, 0, P);
    prefill(copies, 1, P);
    prefill(copies, 2, L2);
    KVCache shared(c, 3, 16 - P, torch::kFloat32, torch::kCPU);
    auto prefix = std::make_shared<KVCache>(c, 1, P, torch::kFloat32, torch::kCPU);
    {
      auto pos = torch::arange(P, torch::kInt64).view({1, P});
      EXPECT_LT(max_diff(m->logits(m->forward_hidden(ids.narrow(0, 0, 1).narrow(1, 0, P), pos, prefix.get())), first), 1e-5);
    }
    shared.set_prefix(0, 2, prefix);
    prefill(shared, 2, L2);
    for (int64_t step = 0; step < steps; ++step) {
      auto tok = torch::empty({3, 1}, torch::kInt64), pos = torch::empty({3, 1}, torch::kInt64);
      for (int64_t r = 0; r < 3; ++r) {
        const int64_t len = r < 2 ? P : L2;
        tok[r][0] = ids[r][len + step];
        pos[r][0] = len + step;
      }
      auto want = m->logits(m->forward_hidden(tok, pos, &copies));
      auto got = m->logits(m->forward_hidden(tok, pos, &shared));
      // To rounding: the two caches' attention sums run over other blockings, and on some CPUs (a Sapphire
      // Rapids Xeon) that moves the last bit (measured: 6e-8).
      EXPECT_LT(max_diff(want, got), 1e-5) << "fast " << fast << " step " << step;
    }
    auto one = torch::zeros({3, 1}, torch::kInt64);
    auto inside = torch::tensor({int64_t{P - 1}, int64_t{P + steps}, int64_t{L2 + steps}}).view({3, 1});
    EXPECT_THROW(m->forward_hidden(one, inside, &shared), Error);
    auto beyond = torch::tensor({int64_t{16}, int64_t{P + steps}, int64_t{L2 + steps}}).view({3, 1});
    EXPECT_THROW(m->forward_hidden(one, beyond, &shared), Error);
  }
}

// A shared prefix counts once in bytes(), moves with its row and is freed
// with the last row that reads it.
TEST(KVCacheSharing, PrefixBytesMovesAndRelease) {
  ModelConfig c = ModelConfig::preset("stories260K");
  KVCache cache(c, 4, 10, torch::kFloat32, torch::kCPU);
  const int64_t rows_bytes = cache.bytes();
  auto prefix = std::make_shared<KVCache>(c, 1, 20, torch::kFloat32, torch::kCPU);
  std::weak_ptr<const KVCache> alive = prefix;
  cache.set_prefix(1, 2, std::move(prefix));
  EXPECT_EQ(cache.bytes(), rows_bytes + rows_bytes / 4 * 2);  // one prefix of 20 slots = two rows of 10
  EXPECT_EQ(cache.prefix_len(1), 20);
  EXPECT_EQ(cache.prefix_len(0), 0);
  EXPECT_EQ(cache.rows(1, 3).prefix_len(0), 20);  // views carry their rows' prefixes
  cache.move_row(2, 0, 25);
  EXPECT_EQ(cache.prefix_len(0), 20);
  EXPECT_EQ(cache.prefix_len(2), 0);
  cache.release_rows(1);
  EXPECT_FALSE(alive.expired());  // row 0 still reads it
  cache.set_prefix(0, 1, nullptr);
  EXPECT_TRUE(alive.expired());
  EXPECT_EQ(cache.bytes(), rows_bytes);
  EXPECT_EQ(cache.peak_bytes(), rows_bytes + rows_bytes / 4 * 2);
  auto nested = std::make_shared<KVCache>(c, 2, 5, torch::kFloat32, torch::kCPU);
  EXPECT_THROW(cache.set_prefix(0, 1, nested), Error);  // a prefix is one row
}

TEST_P(FastPath, UncachedWithPaddingMatchesModulePathOnValidTokens) {
  CausalLM m = model();
  const ModelConfig& c = m->config();
  torch::NoGradGuard ng;
  auto ids = torch::randint(0, c.vocab_size, {2, 9}, torch::kInt64);
  auto pos = torch::arange(9, torch::kInt64).unsqueeze(0).expand({2, 9}).contiguous();
  auto mask = torch::ones({2, 9}, torch::kBool);
  mask[1].narrow(0, 6, 3).fill_(false);  // row 1: 6 tokens + 3 padding
  auto targets = torch::randint(0, c.vocab_size, {2, 9}, torch::kInt64);
  m->set_fast_cpu_path(false);
  auto ref = m->token_logprobs(m->forward_hidden(ids, pos, nullptr, mask), targets);
  m->set_fast_cpu_path(true);
  auto fast = m->token_logprobs(m->forward_hidden(ids, pos, nullptr, mask), targets);
  EXPECT_LT(max_diff(ref.masked_select(mask), fast.masked_select(mask)), 2e-5);
  // Padding changes nothing for the valid tokens of a row (but where the RoPE
  // table follows the forward's longest position, as transformers' dynamic
  // and LongRoPE do: 9 positions there are past the switch, 6 are not).
  const std::string& rope = c.rope_scaling.type;
  if (rope == "dynamic" || rope == "longrope") return;
  auto alone = m->token_logprobs(m->forward_hidden(ids.narrow(0, 1, 1).narrow(1, 0, 6), pos.narrow(0, 1, 1).narrow(1, 0, 6)),
                                 targets.narrow(0, 1, 1).narrow(1, 0, 6));
  EXPECT_LT(max_diff(alone, fast.narrow(0, 1, 1).narrow(1, 0, 6)), 2e-5);
}

// A padding-free forward (forward_hidden's `tokens`: the real tokens of a
// ragged grid, concatenated) against the padded grid, on each path, with
// and without autograd: the same hidden states at every real token, the
// same loss and parameter gradients; a sequence never sees its row-mates
// (the rows' sequences are independent, so swapping one row's tokens
// changes no other row's states).
TEST_P(FastPath, PaddingFreeForwardMatchesThePaddedGrid) {
  CausalLM m = model();
  const ModelConfig& c = m->config();
  const int64_t B = 3, T = 10;
  auto ids = torch::randint(0, c.vocab_size, {B, T}, torch::kInt64);
  auto pos = torch::arange(T, torch::kInt64).unsqueeze(0).expand({B, T}).contiguous();
  auto mask = torch::ones({B, T}, torch::kBool);
  mask[0].narrow(0, 4, 6).fill_(false);  // lengths 4, 10, 7
  mask[2].narrow(0, 7, 3).fill_(false);
  const auto tokens = mask.reshape({-1}).nonzero().view({-1});
  const auto weights = torch::rand({tokens.size(0), c.vocab_size});
  for (int fast = 0; fast < 2; ++fast) {
    m->set_fast_cpu_path(fast == 1);
    {
      torch::NoGradGuard ng;
      const auto grid = m->forward_hidden(ids, pos, nullptr, mask).reshape({B * T, -1}).index_select(0, tokens);
      const auto packed = m->forward_hidden(ids, pos, nullptr, mask, tokens);
      ASSERT_EQ(packed.sizes(), (std::vector<int64_t>{1, tokens.size(0), c.hidden_size}));
      EXPECT_LT(max_diff(packed.squeeze(0), grid), 2e-5) << "fast " << fast;
      auto other = ids.clone();
      other[1].random_(0, c.vocab_size);
      const auto moved = m->forward_hidden(other, pos, nullptr, mask, tokens).squeeze(0);
      EXPECT_EQ(max_diff(moved.narrow(0, 0, 4), packed.squeeze(0).narrow(0, 0, 4)), 0.0) << "row 0 saw row 1";
      EXPECT_GT(max_diff(moved.narrow(0, 4, 10), packed.squeeze(0).narrow(0, 4, 10)), 1e-4);
    }
    // (through the head too: every parameter gets a gradient)
    const auto grid = m->logits(m->forward_hidden(ids, pos, nullptr, mask)).reshape({B * T, -1}).index_select(0, tokens);
    const auto loss_grid = (grid * weights).sum();
    auto g_grid = gradients_of(*m, loss_grid);
    const auto loss_packed = (m->logits(m->forward_hidden(ids, pos, nullptr, mask, tokens)).squeeze(0) * weights).sum();
    auto g_packed = gradients_of(*m, loss_packed);
    // (relative to the summands' magnitude: the weighted sum cancels to near 0)
    const double magnitude = (grid.detach().abs() * weights).sum().item<double>();
    EXPECT_NEAR(loss_grid.item<double>(), loss_packed.item<double>(), 1e-5 * magnitude);
    for (const auto& [name, g] : g_grid) {
      const double scale = std::max(1e-3, g.abs().max().item<double>());
      EXPECT_LT(max_diff(g, g_packed[name]) / scale, 1e-4) << name << " fast " << fast;
    }
  }
}

TEST(FastPathSelection, WhichPathRunsWhen) {
  CausalLM m = make_random_model(ModelConfig::preset("stories260K"), 9, torch::kFloat32, torch::kCPU);
  auto ids = torch::randint(0, 512, {1, 5}, torch::kInt64);
  auto pos = torch::arange(5, torch::kInt64).view({1, 5});
  KVCache cache(m->config(), 1, 8, torch::kFloat32, torch::kCPU);
  EXPECT_TRUE(m->fast_cpu_path());
  EXPECT_TRUE(m->fast_cpu_path_applies());         // training path (autograd functions)
  EXPECT_FALSE(m->fast_cpu_path_applies(&cache));  // no cached decoding under autograd
  auto h = m->forward_hidden(ids, pos);
  EXPECT_TRUE(h.requires_grad());
  torch::NoGradGuard ng;
  EXPECT_TRUE(m->fast_cpu_path_applies(&cache));
  auto fast = m->forward_hidden(ids, pos);
  m->set_fast_cpu_path(false);
  EXPECT_FALSE(m->fast_cpu_path_applies());
  auto slow = m->forward_hidden(ids, pos);
  EXPECT_LT(max_diff(fast, slow), 2e-5);
  EXPECT_LT(max_diff(fast, h.detach()), 2e-5);
  // A bf16 model decodes on the fast path, into an fp32 cache (kv_cache_dtype); every other forward
  // (no cache, or a bf16 cache) runs the module path in bf16.
  CausalLM b = make_random_model(ModelConfig::preset("stories260K"), 9, torch::kBFloat16, torch::kCPU);
  EXPECT_EQ(b->kv_cache_dtype(), torch::kFloat32);
  EXPECT_FALSE(b->fast_cpu_path_applies());
  EXPECT_EQ(b->forward_hidden(ids, pos).scalar_type(), torch::kBFloat16);
  KVCache b32(b->config(), 1, 8, b->kv_cache_dtype(), torch::kCPU);
  EXPECT_TRUE(b->fast_cpu_path_applies(&b32));
  EXPECT_EQ(b->forward_hidden(ids, pos, &b32).scalar_type(), torch::kFloat32);
  KVCache b16(b->config(), 1, 8, torch::kBFloat16, torch::kCPU);
  EXPECT_FALSE(b->fast_cpu_path_applies(&b16));
  EXPECT_EQ(b->forward_hidden(ids, pos, &b16).scalar_type(), torch::kBFloat16);
  {
    torch::AutoGradMode grad(true);  // cached decoding is inference only
    EXPECT_FALSE(b->fast_cpu_path_applies(&b32));
    try {
      b->forward_hidden(ids, pos, &b32);
      ADD_FAILURE() << "an fp32 cache outside the fast path ran";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("the KV cache holds fp32 but the model is bf16"), std::string::npos) << e.what();
    }
  }
  b->set_fast_cpu_path(false);
  EXPECT_EQ(b->kv_cache_dtype(), torch::kBFloat16);
  EXPECT_FALSE(b->fast_cpu_path_applies(&b32));
}

// A step clock (model/step_clock.h) times cached one-token forwards only:
// not a prefill, not a training forward, nothing once detached; its parts
// nest inside the forward, and the results are the same with it attached.
TEST(StepClockTiming, CountsDecodingStepsOnly) {
  CausalLM m = make_random_model(ModelConfig::preset("stories260K"), 9, torch::kFloat32, torch::kCPU);
  StepClock clock;
  m->set_step_clock(&clock);
  auto ids = torch::randint(0, 512, {2, 5}, torch::kInt64);
  auto pos = torch::arange(5, torch::kInt64).repeat({2, 1});
  (void)m->forward_hidden(ids, pos);  // training forward (grad mode on)
  torch::NoGradGuard ng;
  KVCache cache(m->config(), 2, 8, torch::kFloat32, torch::kCPU);
  (void)m->forward_hidden(ids, pos, &cache);  // prefill: 5 tokens per row
  EXPECT_EQ(clock.steps, 0);
  EXPECT_EQ(clock.forward_s, 0.0);
  auto next = torch::tensor({{7}, {9}}, torch::kInt64);
  auto at5 = torch::full({2, 1}, 5, torch::kInt64);
  const torch::Tensor timed = m->forward_hidden(next, at5, &cache);
  EXPECT_EQ(clock.steps, 1);
  EXPECT_GT(clock.projections_s, 0.0);
  EXPECT_GT(clock.attention_s, 0.0);
  EXPECT_GE(clock.forward_s, clock.projections_s + clock.attention_s);
  m->set_step_clock(nullptr);
  const StepClock before = clock;
  KVCache again(m->config(), 2, 8, torch::kFloat32, torch::kCPU);
  (void)m->forward_hidden(ids, pos, &again);
  EXPECT_TRUE(torch::equal(m->forward_hidden(next, at5, &again), timed));
  EXPECT_EQ(clock.steps, before.steps);
  EXPECT_EQ(clock.forward_s, before.forward_s);
}

// A bf16 model's decoding on the fast path computes what the fp32 model
// holding the widened weights computes: prefill of six rows at once (72
// rows, past cpu::kMatmulWtMaxRows: the weights widened for OpenBLAS), then
// decoding (rlf's kernel reading the bf16 weights), the logits of every
// position fed, with unmerged LoRA adapters on every projection (widened
// too). Sums may run in another order, hence the relative tolerance.
TEST_P(FastPath, Bf16WeightsDecodeAsTheFp32ModelOfTheirWidening) {
  CausalLM b = model(), w = model();
  const ModelConfig& c = b->config();
  add_lora_everywhere(*b);
  add_lora_everywhere(*w);  // (its values are b's, widened, below)
  torch::NoGradGuard ng;
  b->to(torch::kBFloat16);
  b->refresh_rope();
  const auto widened = b->named_parameters();
  for (auto& p : w->named_parameters()) p.value().copy_(widened[p.key()].to(torch::kFloat32));
  ASSERT_EQ(b->kv_cache_dtype(), torch::kFloat32);
  auto ids = torch::randint(0, c.vocab_size, {6, 16}, torch::kInt64);
  std::vector<torch::Tensor> out[2];
  for (int k = 0; k < 2; ++k) {
    CausalLMImpl& m = k == 0 ? *w : *b;
    KVCache cache(c, 6, 32, m.kv_cache_dtype(), torch::kCPU);
    ASSERT_TRUE(m.fast_cpu_path_applies(&cache));
    auto pos = torch::arange(12, torch::kInt64).unsqueeze(0).expand({6, 12}).contiguous();
    out[k].push_back(m.logits(m.forward_hidden(ids.narrow(1, 0, 12), pos, &cache)));
    for (int64_t step = 12; step < 16; ++step)
      out[k].push_back(m.logits(m.forward_hidden(ids.narrow(1, step, 1), torch::full({6, 1}, step, torch::kInt64),
                                                 &cache)));
  }
  for (size_t i = 0; i < out[0].size(); ++i) {
    ASSERT_EQ(out[1][i].scalar_type(), torch::kFloat32);
    const double scale = std::max(1.0, out[0][i].abs().max().item<double>());
    EXPECT_LT(max_diff(out[0][i], out[1][i]) / scale, 1e-4) << "call " << i;  // bf16 rounding: 2e-3
  }
  EXPECT_GT(out[0][0].abs().max().item<double>(), 1e-3);  // not a comparison of zeros
}

// The training path's gradients: a weighted log-prob loss over a padded batch,
// backward through both paths, every parameter's gradient compared.
TEST_P(FastPath, TrainingGradientsMatchModulePath) {
  CausalLM m = model();
  const ModelConfig& c = m->config();
  auto ids = torch::randint(0, c.vocab_size, {3, 10}, torch::kInt64);
  auto pos = torch::arange(10, torch::kInt64).unsqueeze(0).expand({3, 10}).contiguous();
  auto mask = torch::ones({3, 10}, torch::kBool);
  mask[2].narrow(0, 7, 3).fill_(false);
  auto targets = torch::randint(0, c.vocab_size, {3, 10}, torch::kInt64);
  auto weights = torch::rand({3, 10}) * mask.to(torch::kFloat32);
  std::map<std::string, torch::Tensor> grads[2];
  double losses[2];
  for (int fast = 0; fast < 2; ++fast) {
    m->set_fast_cpu_path(fast == 1);
    ASSERT_EQ(m->fast_cpu_path_applies(), fast == 1);
    auto lp = m->token_logprobs(m->forward_hidden(ids, pos, nullptr, mask), targets);
    auto loss = -(lp * weights).sum() / weights.sum();
    losses[fast] = loss.item<double>();
    grads[fast] = gradients_of(*m, loss);
  }
  EXPECT_NEAR(losses[0], losses[1], 1e-5);
  for (const auto& [name, g] : grads[0]) {
    const double scale = std::max(1e-3, g.abs().max().item<double>());
    EXPECT_LT(max_diff(g, grads[1][name]) / scale, 1e-4) << name;
  }
  const std::string q = c.family().fused_qkv ? "qkv_proj" : "q_proj";
  EXPECT_GT(grads[0]["model.layers.0.self_attn." + q + ".weight"].abs().max().item<double>(), 1e-6);
}

// LoRA on every projection the family has (Phi-3's fused qkv_proj and
// gate_up_proj included), B non-zero: the adapters' gradients agree on both
// paths, and only the adapters get any.
TEST_P(FastPath, LoraGradientsOnEveryProjectionMatchModulePath) {
  CausalLM m = model();
  const ModelConfig& c = m->config();
  const LoraOptions o = add_lora_everywhere(*m);
  auto ids = torch::randint(0, c.vocab_size, {2, 11}, torch::kInt64);
  auto pos = torch::arange(11, torch::kInt64).unsqueeze(0).expand({2, 11}).contiguous();
  auto targets = torch::randint(0, c.vocab_size, {2, 11}, torch::kInt64);
  std::map<std::string, torch::Tensor> grads[2];
  for (int fast = 0; fast < 2; ++fast) {
    m->set_fast_cpu_path(fast == 1);
    ASSERT_EQ(m->fast_cpu_path_applies(), fast == 1);
    auto lp = m->token_logprobs(m->forward_hidden(ids, pos), targets);
    for (auto& p : m->parameters()) p.mutable_grad() = torch::Tensor();
    (-lp.mean()).backward();
    for (auto& p : m->named_parameters())
      if (p.value().grad().defined()) grads[fast][p.key()] = p.value().grad().clone();
  }
  EXPECT_EQ(grads[0].size(), o.targets.size() * 2 * static_cast<size_t>(c.num_hidden_layers));
  for (const auto& [name, g] : grads[0]) {
    EXPECT_TRUE(is_lora_parameter(name)) << name;
    const double scale = std::max(1e-3, g.abs().max().item<double>());
    ASSERT_TRUE(grads[1].count(name)) << name;
    EXPECT_LT(max_diff(g, grads[1][name]) / scale, 1e-4) << name;
  }
}

// Longer rows and wider heads than the fixture's: head_dim 48 (stories15M's;
// the kernels' 16- and 8-lane passes together) and 40 (a scalar tail), 70
// tokens, and a left-padded row whose positions are not token indices (the
// kernels' general branch), both paths' gradients compared.
TEST(FastPathTraining, LongRowsWideHeadsAndLeftPaddingMatchModulePath) {
  for (const int64_t hd : {48, 40}) {
    ModelConfig c = ModelConfig::preset("stories260K");
    c.num_attention_heads = 2;
    c.num_key_value_heads = 2;
    c.hidden_size = 2 * hd;
    c.intermediate_size = 64;
    c.num_hidden_layers = 2;
    CausalLM m = make_random_model(c, 11, torch::kFloat32, torch::kCPU);
    const int64_t B = 2, T = 70, pad = 6;
    auto ids = torch::randint(0, c.vocab_size, {B, T}, torch::kInt64);
    auto targets = torch::randint(0, c.vocab_size, {B, T}, torch::kInt64);
    for (const bool padded : {false, true}) {
      auto pos = torch::arange(T, torch::kInt64).unsqueeze(0).repeat({B, 1});
      auto mask = torch::ones({B, T}, torch::kBool);
      if (padded) {
        pos[1] = (torch::arange(T, torch::kInt64) - pad).clamp_min(0);
        mask[1].narrow(0, 0, pad).fill_(false);
      }
      auto weights = torch::rand({B, T}) * mask.to(torch::kFloat32);
      std::map<std::string, torch::Tensor> grads[2];
      for (int fast = 0; fast < 2; ++fast) {
        m->set_fast_cpu_path(fast == 1);
        ASSERT_EQ(m->fast_cpu_path_applies(), fast == 1);
        auto lp = m->token_logprobs(m->forward_hidden(ids, pos, nullptr, mask), targets);
        grads[fast] = gradients_of(*m, -(lp * weights).sum() / weights.sum());
      }
      for (const auto& [name, g] : grads[0]) {
        const double scale = std::max(1e-3, g.abs().max().item<double>());
        EXPECT_LT(max_diff(g, grads[1][name]) / scale, 1e-4) << name << " hd " << hd << " padded " << padded;
      }
      EXPECT_GT(grads[1]["model.layers.0.self_attn.k_proj.weight"].abs().max().item<double>(), 1e-6);
    }
  }
}

// The training loss's fused log-probs (fast_token_logprobs) against LibTorch:
// values, entropies (algorithms/entropy.h), gradients; the normaliser is the
// sampler's (cpu::softmax_rows) bit for bit; bad targets and non-finite rows.
TEST(FastTokenLogprobs, MatchLibTorchAndTheSamplersNormaliser) {
  torch::manual_seed(3);
  const int64_t N = 37, V = 3001;  // V: two full blocks of 1,024 and a ragged one
  auto logits = torch::randn({N, V}) * 4.0;
  logits[3][17] = 60.0f;  // one dominant token: entropy near 0
  logits[5].fill_(0.5f);  // uniform: entropy log V
  auto targets = torch::randint(0, V, {N}, torch::kInt64);
  auto weights = torch::rand({N});
  auto a = logits.clone().requires_grad_(true), b = logits.clone().requires_grad_(true);
  torch::Tensor ent;
  auto lp = fast_token_logprobs(a, targets, &ent);
  auto want = torch::log_softmax(b, -1).gather(1, targets.unsqueeze(1)).squeeze(1);
  EXPECT_LT(max_diff(lp.detach(), want.detach()), 1e-5);
  EXPECT_LT(max_diff(ent, algo::entropy_from_logits(logits.unsqueeze(0), 0).squeeze(0)), 2e-5);
  EXPECT_NEAR(ent[5].item<double>(), std::log(static_cast<double>(V)), 1e-5);
  EXPECT_LT(ent[3].item<double>(), 1e-6);
  (lp * weights).sum().backward();
  (want * weights).sum().backward();
  // (gradients are at most 1 in magnitude; a logit of 60 moves lse's last bit by 4e-6)
  EXPECT_LT(max_diff(a.grad(), b.grad()), 1e-5);
  // Without the entropy: the same log-probs.
  EXPECT_TRUE(torch::equal(fast_token_logprobs(logits, targets).detach(), lp.detach()));
  // lse = the sampler's: log p(target) + lse reproduces the logit, with softmax_rows' lse.
  auto lse = torch::empty({N}), probs = torch::empty({N, V}), inv_t = torch::ones({N});
  cpu::softmax_rows(logits.data_ptr<float>(), inv_t.data_ptr<float>(), N, V, lse.data_ptr<float>(),
                    probs.data_ptr<float>());
  EXPECT_TRUE(torch::equal(lp.detach(), logits.gather(1, targets.unsqueeze(1)).squeeze(1) - lse));
  // Bad input.
  auto bad = targets.clone();
  bad[4] = V;
  EXPECT_THROW(fast_token_logprobs(logits, bad), Error);
  EXPECT_THROW(fast_token_logprobs(logits.to(torch::kFloat64), targets), Error);
  auto inf_row = logits.clone();
  inf_row[2][0] = INFINITY;
  auto lp_inf = fast_token_logprobs(inf_row, targets, &ent);
  EXPECT_TRUE(std::isnan(lp_inf[2].item<float>()));
  EXPECT_TRUE(std::isnan(ent[2].item<float>()));
  EXPECT_FALSE(std::isnan(lp_inf[1].item<float>()));
}

// token_logprobs(..., from): columns before `from` are 0 and skipped; the rest,
// and every gradient of a loss weighted only there, equal the full call's
// (both paths; with the entropy too).
TEST_P(FastPath, LogprobsFromAColumnMatchTheFullCall) {
  CausalLM m = model();
  const ModelConfig& c = m->config();
  auto ids = torch::randint(0, c.vocab_size, {3, 12}, torch::kInt64);
  auto pos = torch::arange(12, torch::kInt64).unsqueeze(0).expand({3, 12}).contiguous();
  auto targets = torch::randint(0, c.vocab_size, {3, 12}, torch::kInt64);
  const int64_t from = 5;
  auto weights = torch::rand({3, 12});
  weights.narrow(1, 0, from).zero_();
  for (const bool fast : {false, true}) {
    m->set_fast_cpu_path(fast);
    std::map<std::string, torch::Tensor> grads[2];
    torch::Tensor lps[2], ents[2];
    for (int i = 0; i < 2; ++i) {
      auto [lp, ent] = m->token_logprobs_entropy(m->forward_hidden(ids, pos), targets, false, i == 0 ? 0 : from);
      lps[i] = lp.detach();
      ents[i] = ent;
      grads[i] = gradients_of(*m, -(lp * weights).sum());
    }
    // To rounding: fewer rows through the classifier's product may take another blocking (measured on a Sapphire
    // Rapids Xeon: the last bit moves).
    EXPECT_LT(max_diff(lps[1].narrow(1, from, 12 - from), lps[0].narrow(1, from, 12 - from)), 1e-5) << fast;
    EXPECT_LT(max_diff(ents[1].narrow(1, from, 12 - from), ents[0].narrow(1, from, 12 - from)), 1e-5) << fast;
    EXPECT_EQ(lps[1].narrow(1, 0, from).abs().max().item<float>(), 0.0f);
    EXPECT_EQ(ents[1].narrow(1, 0, from).abs().max().item<float>(), 0.0f);
    // Gradients: equal up to the summation order of the weight products (they
    // sum over fewer rows from `from`): relative to each tensor's scale.
    for (const auto& [name, g] : grads[0]) {
      const double scale = g.abs().max().item<double>();
      EXPECT_LE(max_diff(g, grads[1][name]), 1e-5 * scale + 1e-7) << name << " (fast " << fast << ", scale " << scale << ")";
    }
  }
  EXPECT_THROW(m->token_logprobs(m->forward_hidden(ids, pos), targets, 12), Error);
}

// Forward log-probs and every parameter gradient of the training path, and
// cached decoding logits, are bit-identical with the kernels on 1 and 3
// threads (cpu::set_kernel_threads): they split work by rows, heads and
// output features, never inside a sum (the large products run on OpenBLAS,
// whose thread count this does not change; `rlf demo` fixes that one).
TEST_P(FastPath, ResultsDoNotDependOnTheThreadCount) {
  CausalLM m = model();
  const ModelConfig& c = m->config();
  auto ids = torch::randint(0, c.vocab_size, {5, 23}, torch::kInt64);
  auto pos = torch::arange(23, torch::kInt64).unsqueeze(0).expand({5, 23}).contiguous();
  auto mask = torch::ones({5, 23}, torch::kBool);
  mask[3].narrow(0, 15, 8).fill_(false);
  auto targets = torch::randint(0, c.vocab_size, {5, 23}, torch::kInt64);
  const int threads_before = cpu::kernel_threads();
  std::map<std::string, torch::Tensor> grads[2];
  torch::Tensor logprobs[2], decoded[2];
  const int counts[2] = {1, 3};
  for (int i = 0; i < 2; ++i) {
    cpu::set_kernel_threads(counts[i]);
    auto lp = m->token_logprobs(m->forward_hidden(ids, pos, nullptr, mask), targets);
    logprobs[i] = lp.detach().clone();
    grads[i] = gradients_of(*m, -(lp * mask).sum() / mask.sum());
    torch::NoGradGuard ng;
    KVCache cache(c, 5, 32, torch::kFloat32, torch::kCPU);
    m->forward_hidden(ids.narrow(1, 0, 10), pos.narrow(1, 0, 10), &cache);
    decoded[i] = m->logits(m->forward_hidden(ids.narrow(1, 10, 1), pos.narrow(1, 10, 1), &cache));
  }
  cpu::set_kernel_threads(threads_before);
  EXPECT_TRUE(torch::equal(logprobs[0], logprobs[1]));
  EXPECT_TRUE(torch::equal(decoded[0], decoded[1]));
  for (const auto& [name, g] : grads[0]) EXPECT_TRUE(torch::equal(g, grads[1][name])) << name;
}

// Decoding with packed weights (pack_for_decoding, cpu::matmul_panels):
// every projection and the classifier are packed; cached prefill and decode
// match the module path as the unpacked fast path does; a weight changed in
// place (its version bumped, as LibTorch ops and the optimizer do) is no
// longer served from the panels, so the forward follows the new weight; a
// change through a raw pointer that bumps nothing is not seen (the contract
// packed_weights.h states); release frees everything.
TEST_P(FastPath, PackedDecodingMatchesAndNoticesChangedWeights) {
  if (!cpu::vector_kernels()) GTEST_SKIP() << "a portable kernels build decodes without packing";
  CausalLM m = model();
  const ModelConfig& c = m->config();
  torch::NoGradGuard ng;
  auto ids = torch::randint(0, c.vocab_size, {3, 12}, torch::kInt64);
  auto pos = torch::arange(12, torch::kInt64).unsqueeze(0).expand({3, 12}).contiguous();
  auto decode = [&] {
    KVCache cache(c, 3, 16, torch::kFloat32, torch::kCPU);
    std::vector<torch::Tensor> out;
    out.push_back(m->logits(m->forward_hidden(ids.narrow(1, 0, 8), pos.narrow(1, 0, 8), &cache)));
    for (int64_t t = 8; t < 12; ++t)
      out.push_back(m->logits(m->forward_hidden(ids.narrow(1, t, 1), pos.narrow(1, t, 1), &cache)));
    return torch::cat(out, 1);
  };
  m->set_fast_cpu_path(false);
  const auto module_path = decode();
  m->set_fast_cpu_path(true);
  m->pack_for_decoding();
  int64_t expect_bytes = 0, packed = 0;
  std::vector<torch::Tensor> weights;
  for (auto& p : m->named_parameters())
    if (p.value().dim() == 2 && p.key().find("embed_tokens") == std::string::npos) weights.push_back(p.value());
  if (c.tie_word_embeddings) weights.push_back(m->model->embed_tokens->weight);
  for (const auto& w : weights) {
    expect_bytes += cpu::panel_floats(w.size(0), w.size(1)) * 4;
    packed += m->packed_weights().find(w) != nullptr;
  }
  EXPECT_EQ(packed, static_cast<int64_t>(weights.size()));
  const int64_t per_layer = static_cast<int64_t>(m->layer(0).projections().size());
  EXPECT_EQ(static_cast<int64_t>(weights.size()), per_layer * c.num_hidden_layers + 1);
  EXPECT_EQ(m->packed_weights().bytes(), expect_bytes);
  const auto packed_out = decode();
  EXPECT_LT(max_diff(packed_out, module_path), 2e-5);

  // A projection changed in place: no longer packed, the forward follows it.
  torch::Tensor& wq = (*m->layer(0).projections()[0].linear)->weight;  // q_proj, or Phi-3's qkv_proj
  wq.add_(torch::randn_like(wq));
  EXPECT_EQ(m->packed_weights().find(wq), nullptr);
  m->set_fast_cpu_path(false);
  const auto module_changed = decode();
  m->set_fast_cpu_path(true);
  EXPECT_GT(max_diff(module_changed, module_path), 1e-3);
  EXPECT_LT(max_diff(decode(), module_changed), 2e-5);

  // Through a raw pointer nothing is bumped: the stale panels are still used
  // (why the engine repacks at every generate call), until repacked.
  m->pack_for_decoding();
  const auto at_pack = decode();
  float* raw = wq.data_ptr<float>();
  for (int64_t i = 0; i < wq.numel(); ++i) raw[i] += 0.2f * static_cast<float>(i % 5) - 0.4f;
  EXPECT_NE(m->packed_weights().find(wq), nullptr);
  EXPECT_EQ(max_diff(decode(), at_pack), 0.0);
  m->pack_for_decoding();
  EXPECT_GT(max_diff(decode(), at_pack), 1e-3);

  m->release_decoding_weights();
  EXPECT_EQ(m->packed_weights().bytes(), 0);
  EXPECT_EQ(m->packed_weights().find(wq), nullptr);

  // set_pack_weights(false) (model.pack_weights, --pack-weights off): no copy
  // is made, and decoding is the unpacked kernels' (within the same 2e-5).
  const auto unpacked_ref = decode();
  m->set_pack_weights(false);
  m->pack_for_decoding();
  EXPECT_EQ(m->packed_weights().bytes(), 0);
  EXPECT_EQ(max_diff(decode(), unpacked_ref), 0.0);
  m->set_pack_weights(true);
  m->pack_for_decoding();
  EXPECT_GT(m->packed_weights().bytes(), 0);
  EXPECT_LT(max_diff(decode(), unpacked_ref), 2e-5);
  m->release_decoding_weights();
}

INSTANTIATE_TEST_SUITE_P(Models, FastPath,
                         ::testing::Values("stories260K", "odd", "qwen3", "gemma2", "gemma3", "phi4mini", "smollm3",
                                           "olmo2"));

}  // namespace
}  // namespace rlf

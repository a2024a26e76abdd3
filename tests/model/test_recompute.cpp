// Recompute in backward (model/recompute.h) against the plain graph, and the
// vocabulary-chunked log-probs that use it (CausalLM::set_logprob_recompute)
// against the path that keeps every chunk's logits: the same values and
// gradients, module path and fp32 CPU fast path, with entropy (with and
// without its gradient), selected buckets (distillation), skipped columns,
// soft-capped logits and tied embeddings; and activation checkpointing per
// segment of decoder layers (CausalLM::set_checkpoint_layers) against
// keeping every activation, with LoRA (dropout masks replayed).
#include <gtest/gtest.h>

#include <map>

#include "model/chunked_classifier.h"
#include "model/grad_in_place.h"
#include "model/loader.h"
#include "model/lora.h"
#include "model/memory_levers.h"
#include "model/recompute.h"
#include "model/transformer.h"
#include "tests/support/tensors.h"
#include "util/error.h"

namespace rlf {
namespace {

using test::max_diff;

// |a - b| <= 1e-6 * max(1, max |b|): fp32 results that differ only in the
// order of float sums (chunking, gradient accumulation).
void expect_close(const torch::Tensor& a, const torch::Tensor& b, const std::string& what, double rel = 1e-6) {
  ASSERT_TRUE(a.defined() && b.defined()) << what;
  ASSERT_EQ(a.sizes(), b.sizes()) << what;
  const double scale = std::max(1.0, b.abs().max().item<double>());
  EXPECT_LE(max_diff(a, b), rel * scale) << what;
}

TEST(Recompute, GradientsToInputsAndParametersMatchThePlainGraph) {
  torch::manual_seed(1);
  torch::nn::Linear lin(6, 5);
  auto w2 = torch::randn({5, 4}).requires_grad_(true);
  auto x = torch::randn({3, 6}).requires_grad_(true);
  auto y = torch::randn({3, 5}).requires_grad_(true);
  auto ids = torch::tensor({0, 2, 1}, torch::kInt64);  // captured, no gradient
  auto fn = [&](const std::vector<torch::Tensor>& in) {
    auto h = torch::tanh(lin(in[0])) * in[1];
    auto out = torch::matmul(h, w2);
    auto picked = out.gather(1, ids.unsqueeze(1)).squeeze(1);
    auto stat = out.detach().abs().sum(1);  // logged only: no gradient
    return std::vector<torch::Tensor>{out, picked, stat};
  };
  std::vector<torch::Tensor> params = lin->parameters();
  params.push_back(w2);
  std::vector<torch::Tensor> all = {x, y};
  for (auto& p : params) all.push_back(p);

  auto loss_of = [&](const std::vector<torch::Tensor>& o) { return (o[0] * o[0]).sum() + 3.0 * o[1].sum(); };
  {  // an output the loss does not read, its gradient retained (undefined)
    auto o = recompute(fn, {x, y}, params);
    o[1].retain_grad();
    o[0].sum().backward();
    EXPECT_FALSE(o[1].grad().defined());
  }
  auto plain = loss_of(fn({x, y}));
  const auto g_plain = torch::autograd::grad({plain}, all);
  const auto out = recompute(fn, {x, y}, params);
  ASSERT_EQ(out.size(), 3u);
  EXPECT_GT(out[2].sum().item<double>(), 0.0);
  const auto g_rec = torch::autograd::grad({loss_of(out)}, all);  // works with grad(), not only backward()
  for (size_t i = 0; i < all.size(); ++i) expect_close(g_rec[i], g_plain[i], "tensor " + std::to_string(i));

  // backward() accumulates into .grad as without recompute.
  for (auto& t : all) t.mutable_grad() = torch::Tensor();
  loss_of(recompute(fn, {x, y}, params)).backward();
  for (size_t i = 0; i < all.size(); ++i) expect_close(all[i].grad(), g_plain[i], ".grad " + std::to_string(i));
}

TEST(Recompute, FrozenInputsWithTrainableParameters) {
  // Like a layer above frozen embeddings with LoRA: only the parameters need gradients.
  torch::manual_seed(2);
  torch::nn::Linear lin(4, 4);
  auto x = torch::randn({2, 4});
  auto fn = [&](const std::vector<torch::Tensor>& in) { return std::vector<torch::Tensor>{torch::relu(lin(in[0]))}; };
  auto g_plain = torch::autograd::grad({fn({x})[0].pow(2).sum()}, lin->parameters());
  auto out = recompute(fn, {x}, lin->parameters());
  ASSERT_TRUE(out[0].requires_grad());
  auto g_rec = torch::autograd::grad({out[0].pow(2).sum()}, lin->parameters());
  for (size_t i = 0; i < g_rec.size(); ++i) expect_close(g_rec[i], g_plain[i], "parameter " + std::to_string(i));
}

TEST(Recompute, WithoutGradientsItIsAPlainCall) {
  torch::nn::Linear lin(3, 2);
  auto x = torch::randn({1, 3});
  torch::NoGradGuard ng;
  int calls = 0;
  auto out = recompute([&](const std::vector<torch::Tensor>& in) { ++calls; return std::vector<torch::Tensor>{lin(in[0])}; },
                       {x}, lin->parameters());
  EXPECT_EQ(calls, 1);
  EXPECT_FALSE(out[0].requires_grad());
}

// Tiny models: untied lm_head with GQA and biases; Gemma 2 (soft-capped
// logits, tied embeddings, scaled embeddings).
CausalLM tiny_model(const std::string& name) {
  Json j = {{"vocab_size", 96},        {"hidden_size", 48},        {"intermediate_size", 80},
            {"num_hidden_layers", 2},  {"num_attention_heads", 4}, {"num_key_value_heads", 2},
            {"max_position_embeddings", 64}, {"rms_norm_eps", 1e-6}, {"tie_word_embeddings", false},
            {"architectures", {"Qwen2ForCausalLM"}}};
  if (name == "gemma2")
    j.update({{"architectures", {"Gemma2ForCausalLM"}}, {"head_dim", 24}, {"query_pre_attn_scalar", 20},
              {"sliding_window", 5}, {"attn_logit_softcapping", 1.5}, {"final_logit_softcapping", 2.0},
              {"tie_word_embeddings", true}});
  auto m = make_random_model(ModelConfig::from_hf_json(j, name), 7, torch::kFloat32, torch::kCPU);
  torch::NoGradGuard ng;
  // Logits large enough that the soft-cap and the softmax's tails matter.
  for (auto& p : m->named_parameters())
    if (p.key().find("embed_tokens") != std::string::npos || p.key().find("lm_head") != std::string::npos)
      p.value().mul_(20.0);
  return m;
}

struct LogprobCase {
  std::string model;
  bool fast;           // fp32 CPU fast path (fast_token_logprobs) or the module path
  bool entropy_grad;   // entropy with its gradient, or logged only
  bool select;         // token_logprobs_selected (distillation's buckets)
  int64_t from;        // skipped columns
  int64_t chunk_rows;  // recompute's chunk (0 = automatic: one chunk here)
};

std::string case_name(const ::testing::TestParamInfo<LogprobCase>& i) {
  const LogprobCase& c = i.param;
  return c.model + (c.fast ? "_fast" : "_module") + (c.entropy_grad ? "_entgrad" : "_entlog") +
         (c.select ? "_select" : "") + "_from" + std::to_string(c.from) + "_rows" + std::to_string(c.chunk_rows);
}

class LogprobRecompute : public ::testing::TestWithParam<LogprobCase> {};

TEST_P(LogprobRecompute, SameValuesAndGradientsAsKeepingTheLogits) {
  const LogprobCase& p = GetParam();
  CausalLM m = tiny_model(p.model);
  m->set_fast_cpu_path(p.fast);
  const int64_t B = 3, T = 9, V = m->config().vocab_size, k = 4;
  torch::manual_seed(3);
  auto ids = torch::randint(0, V, {B, T}, torch::kInt64);
  auto targets = torch::randint(0, V, {B, T}, torch::kInt64);
  auto select = torch::randperm(V, torch::kInt64).narrow(0, 0, k).view({1, 1, k}).expand({B, T, k}).contiguous();
  auto positions = torch::arange(T, torch::kInt64).view({1, T}).expand({B, T}).contiguous();
  auto wl = torch::randn({B, T}), we = torch::randn({B, T}), ws = torch::randn({B, T, k + 1});

  struct Run {
    torch::Tensor lp, ent, sel;
    std::map<std::string, torch::Tensor> grads;
  } run[2];
  for (int again = 0; again < 2; ++again) {
    m->set_logprob_recompute(again == 1, again == 1 ? p.chunk_rows : 0);
    for (auto& q : m->parameters()) q.mutable_grad() = torch::Tensor();
    auto hidden = m->forward_hidden(ids, positions);
    Run& r = run[again];
    if (p.select)
      r.lp = m->token_logprobs_selected(hidden, targets, select, &r.sel, &r.ent, p.entropy_grad, p.from);
    else
      std::tie(r.lp, r.ent) = m->token_logprobs_entropy(hidden, targets, p.entropy_grad, p.from);
    EXPECT_EQ(r.ent.requires_grad(), p.entropy_grad);
    auto loss = (r.lp * wl).sum();
    if (p.entropy_grad) loss = loss + (r.ent * we).sum();
    if (p.select) loss = loss + (r.sel * ws).sum();
    loss.backward();
    for (auto& q : m->named_parameters())
      if (q.value().grad().defined()) r.grads[q.key()] = q.value().grad().clone();
  }
  expect_close(run[1].lp, run[0].lp, "log-probs");
  expect_close(run[1].ent, run[0].ent, "entropy");
  if (p.select) expect_close(run[1].sel, run[0].sel, "selected");
  EXPECT_EQ(run[0].lp.narrow(1, 0, p.from).abs().sum().item<double>(), 0.0);
  ASSERT_EQ(run[1].grads.size(), run[0].grads.size());
  for (const auto& [name, g] : run[0].grads) {
    ASSERT_TRUE(run[1].grads.count(name)) << name;
    expect_close(run[1].grads.at(name), g, name);
  }
  // One chunk in both: the very same operations, so the same bits.
  if (p.chunk_rows == 0) {
    EXPECT_TRUE(torch::equal(run[1].lp, run[0].lp));
  }
}

std::vector<LogprobCase> cases() {
  std::vector<LogprobCase> out;
  for (const char* model : {"qwen2", "gemma2"})
    for (bool fast : {false, true})
      for (bool entropy_grad : {false, true}) {
        out.push_back({model, fast, entropy_grad, false, 0, 0});
        out.push_back({model, fast, entropy_grad, true, 2, 7});  // chunks of 2 positions (B = 3)
      }
  out.push_back({"qwen2", true, false, false, 3, 4});  // chunks of 1 position
  return out;
}

INSTANTIATE_TEST_SUITE_P(Models, LogprobRecompute, ::testing::ValuesIn(cases()), case_name);

// Sampling-mask replay (token_logprobs' keep_ids): where a position has ids,
// the target's log-prob renormalised over their logits, written out here as
// logit - logsumexp over the ids; where it has none, the whole vocabulary's.
// Values and gradients, keeping the logits or recomputing them in chunks
// (both now take the kept ids' logits alone), fast and module path,
// soft-capped logits (Gemma 2).
TEST(SamplingMask, LogprobsRenormaliseOverTheKeptIdsWithTheirGradients) {
  for (const char* name : {"qwen2", "gemma2"})
    for (bool fast : {false, true})
      for (int64_t chunk_rows : {int64_t{-1}, int64_t{0}, int64_t{4}}) {  // -1: logits kept
        SCOPED_TRACE(std::string(name) + (fast ? " fast" : " module") + " rows " + std::to_string(chunk_rows));
        CausalLM m = tiny_model(name);
        m->set_fast_cpu_path(fast);
        m->set_logprob_recompute(chunk_rows >= 0, std::max<int64_t>(chunk_rows, 0));
        const int64_t B = 2, T = 7, V = m->config().vocab_size, k = 5;
        torch::manual_seed(5);
        auto ids = torch::randint(0, V, {B, T}, torch::kInt64);
        auto targets = torch::randint(0, V, {B, T}, torch::kInt64);
        auto positions = torch::arange(T, torch::kInt64).view({1, T}).expand({B, T}).contiguous();
        // Each position's set: the target, 3 other ids, one -1; row 1 position 2 and 5: no ids at all.
        auto keep = torch::randint(0, V, {B, T, k}, torch::kInt64);
        keep.select(2, 0).copy_(targets);
        keep.select(2, k - 1).fill_(-1);
        keep[1][2].fill_(-1), keep[1][5].fill_(-1);
        auto w = torch::randn({B, T});
        std::map<std::string, torch::Tensor> grads[2];
        torch::Tensor lp[2];
        for (int direct = 0; direct < 2; ++direct) {
          for (auto& q : m->parameters()) q.mutable_grad() = torch::Tensor();
          auto hidden = m->forward_hidden(ids, positions);
          if (direct == 0) {
            lp[0] = m->token_logprobs(hidden, targets, 0, keep);
          } else {
            auto logits = m->logits(hidden).to(torch::kFloat32);  // [B, T, V], soft-capped
            auto full = torch::log_softmax(logits, -1).gather(-1, targets.unsqueeze(-1)).squeeze(-1);
            std::vector<torch::Tensor> rows;
            for (int64_t b = 0; b < B; ++b)
              for (int64_t t = 0; t < T; ++t) {
                std::vector<int64_t> set;
                for (int64_t j = 0; j < k; ++j)
                  if (keep[b][t][j].item<int64_t>() >= 0) set.push_back(keep[b][t][j].item<int64_t>());
                if (set.empty()) {
                  rows.push_back(full[b][t]);
                  continue;
                }
                auto l = logits[b][t];
                rows.push_back(l[targets[b][t].item<int64_t>()] - torch::logsumexp(l.index_select(0, torch::tensor(set)), 0));
              }
            lp[1] = torch::stack(rows).view({B, T});
          }
          (lp[direct] * w).sum().backward();
          for (auto& q : m->named_parameters())
            if (q.value().grad().defined()) grads[direct][q.key()] = q.value().grad().clone();
        }
        expect_close(lp[0], lp[1], "log-probs");
        EXPECT_LE(lp[0].max().item<double>(), 1e-6) << "a log-prob renormalised over a set holding the target";
        ASSERT_EQ(grads[0].size(), grads[1].size());
        // The kept ids' logits come from another kernel than the whole classifier's (model/kept_logits.h,
        // whose float64 test proves the formula): fp32 gradients through soft-capped logits of 20x-scaled
        // embeddings agree to a few 1e-6 (1.3e-6 on an AMD EPYC, Zen 3).
        for (const auto& [key, g] : grads[1]) expect_close(grads[0].at(key), g, key, 5e-6);
      }
}

struct LayerCase {
  std::string model;
  bool fast;             // fp32 CPU fast path or the module path
  int64_t per_segment;   // set_checkpoint_layers
  double lora_dropout;   // < 0: no adapters
};

std::string layer_case_name(const ::testing::TestParamInfo<LayerCase>& i) {
  const LayerCase& c = i.param;
  return c.model + (c.fast ? "_fast" : "_module") + "_k" + std::to_string(c.per_segment) +
         (c.lora_dropout < 0 ? "" : c.lora_dropout > 0 ? "_lora_dropout" : "_lora");
}

class LayerCheckpoint : public ::testing::TestWithParam<LayerCase> {};

TEST_P(LayerCheckpoint, SameValuesAndGradientsAsKeepingActivations) {
  const LayerCase& p = GetParam();
  CausalLM m = tiny_model(p.model);
  m->set_fast_cpu_path(p.fast);
  if (p.lora_dropout >= 0) {
    LoraOptions o;
    o.rank = 4;
    o.dropout = p.lora_dropout;
    o.targets = {"q_proj", "v_proj", "down_proj"};
    add_lora(*m, o, 11);
    torch::NoGradGuard ng;  // B starts at 0: make the adapters matter
    for (auto& q : m->named_parameters())
      if (q.key().find("lora_B") != std::string::npos) q.value().normal_(0.0, 0.1);
  }
  const int64_t B = 2, T = 7, V = m->config().vocab_size;
  torch::manual_seed(4);
  auto ids = torch::randint(0, V, {B, T}, torch::kInt64);
  auto targets = torch::randint(0, V, {B, T}, torch::kInt64);
  auto positions = torch::arange(T, torch::kInt64).view({1, T}).expand({B, T}).contiguous();
  auto key_mask = torch::ones({B, T}, torch::kBool);
  key_mask[1][0] = false;  // a padded row
  const torch::Tensor gen_state = m->lora ? m->lora->dropout_gen.get_state() : torch::Tensor();

  struct Run {
    torch::Tensor lp;
    std::map<std::string, torch::Tensor> grads;
  } run[2];
  for (int on = 0; on < 2; ++on) {
    m->set_checkpoint_layers(on ? p.per_segment : 0);
    if (m->lora) m->lora->dropout_gen.set_state(gen_state);  // the same masks in both runs
    for (auto& q : m->parameters()) q.mutable_grad() = torch::Tensor();
    auto hidden = m->forward_hidden(ids, positions, nullptr, key_mask);
    EXPECT_EQ(m->fast_cpu_path_applies(), p.fast);
    run[on].lp = m->token_logprobs(hidden, targets);
    run[on].lp.sum().backward();
    for (auto& q : m->named_parameters())
      if (q.value().grad().defined()) run[on].grads[q.key()] = q.value().grad().clone();
  }
  expect_close(run[1].lp, run[0].lp, "log-probs");
  ASSERT_EQ(run[1].grads.size(), run[0].grads.size());
  ASSERT_FALSE(run[0].grads.empty());
  for (const auto& [name, g] : run[0].grads) {
    ASSERT_TRUE(run[1].grads.count(name)) << name;
    expect_close(run[1].grads.at(name), g, name);
  }
}

std::vector<LayerCase> layer_cases() {
  std::vector<LayerCase> out;
  for (const char* model : {"qwen2", "gemma2"})
    for (bool fast : {false, true})
      for (int64_t k : {1, 2}) out.push_back({model, fast, k, -1});
  for (bool fast : {false, true}) {
    out.push_back({"qwen2", fast, 1, 0.0});  // frozen base: only the adapters need gradients
    out.push_back({"qwen2", fast, 1, 0.3});  // dropout masks replayed
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(Models, LayerCheckpoint, ::testing::ValuesIn(layer_cases()), layer_case_name);

TEST(LayerCheckpoint, RejectsANegativeSegment) {
  CausalLM m = tiny_model("qwen2");
  EXPECT_THROW(m->set_checkpoint_layers(-1), Error);
}

// A loss reading only one of the outputs (the others' gradients undefined).
TEST(LogprobRecompute, LossOfOneOutputOnly) {
  CausalLM m = tiny_model("qwen2");
  const int64_t B = 2, T = 5, V = m->config().vocab_size;
  torch::manual_seed(5);
  auto ids = torch::randint(0, V, {B, T}, torch::kInt64);
  auto positions = torch::arange(T, torch::kInt64).view({1, T}).expand({B, T}).contiguous();
  for (int which = 0; which < 2; ++which) {
    torch::Tensor g[2];
    for (int again = 0; again < 2; ++again) {
      m->set_logprob_recompute(again == 1);
      m->zero_grad();
      auto [lp, ent] = m->token_logprobs_entropy(m->forward_hidden(ids, positions), ids, true);
      lp.retain_grad();
      ent.retain_grad();
      (which == 0 ? lp : ent).sum().backward();
      g[again] = m->model->embed_tokens->weight.grad().clone();
    }
    expect_close(g[1], g[0], which == 0 ? "log-probs only" : "entropy only");
  }
}

// The auto settings (model/memory_levers.h) turn each lever on from its
// threshold on, count what they did, and compute what the levers compute.
TEST(MemoryLevers, AutoTurnsEachLeverOnFromItsThreshold) {
  CausalLM m = tiny_model("qwen2");
  const ModelConfig& c = m->config();
  const int64_t B = 2, T = 6, V = c.vocab_size;
  torch::manual_seed(6);
  auto ids = torch::randint(0, V, {B, T}, torch::kInt64);
  auto positions = torch::arange(T, torch::kInt64).view({1, T}).expand({B, T}).contiguous();
  const int64_t kept = layer_activation_bytes(c, B * T, T, 4, m->fast_cpu_path()) * c.num_hidden_layers;
  ASSERT_GT(kept, 0);
  struct Case {
    int64_t auto_logits, auto_bytes;
    int64_t recomputed, checkpointed;  // what auto must do
  };
  torch::Tensor reference_grad;
  for (const Case& k : {Case{B * T * V + 1, kept + 1, 0, 0}, Case{B * T * V, kept, 1, 1}, Case{1, 0, 1, 0}}) {
    MemoryLevers lv;  // auto, auto
    lv.auto_logits = k.auto_logits;
    lv.auto_activation_bytes = k.auto_bytes;  // 0: never
    m->set_memory_levers(lv);
    const auto before = m->memory_lever_uses();
    m->zero_grad();
    m->token_logprobs(m->forward_hidden(ids, positions), ids).sum().backward();
    {
      torch::NoGradGuard ng;  // no autograd: neither lever applies
      m->token_logprobs(m->forward_hidden(ids, positions), ids);
    }
    const auto after = m->memory_lever_uses();
    EXPECT_EQ(after.recomputed_logprob_calls - before.recomputed_logprob_calls, k.recomputed) << k.auto_logits;
    EXPECT_EQ(after.checkpointed_forwards - before.checkpointed_forwards, k.checkpointed) << k.auto_bytes;
    const auto g = m->model->embed_tokens->weight.grad().clone();
    if (!reference_grad.defined()) reference_grad = g;
    else expect_close(g, reference_grad, "gradient with the levers auto-on");
  }
}

TEST(MemoryLevers, EstimatesGrowWithTheShapeAndShrinkWithRecompute) {
  ModelConfig c;  // Llama-2-7B's shape: 4096 wide, 32 heads, 11008 MLP, vocabulary 32000
  // Per position: 6·D + 2·D + 3·D + 4·I + 2·H·T elements.
  EXPECT_EQ(layer_activation_bytes(c, 1, 1, 2, false), (11 * 4096 + 4 * 11008 + 2 * 32) * 2);
  EXPECT_EQ(layer_activation_bytes(c, 10, 100, 4, false), 10 * (11 * 4096 + 4 * 11008 + 2 * 32 * 100) * 4);
  // The fused kernels keep the attention probabilities only (H·T per position of the grid).
  EXPECT_EQ(layer_activation_bytes(c, 10, 100, 4, true), 10 * (11 * 4096 + 2 * 11008 + 32 * 100) * 4);
  // Padding-free: 10 tokens on a grid of 40 cells (attention runs on the grid).
  EXPECT_EQ(layer_activation_bytes(c, 10, 100, 4, true, 40), (10 * (11 * 4096 + 2 * 11008) + 40 * 32 * 100) * 4);
  EXPECT_EQ(logprob_bytes(c, 1000, false, 0), 1000LL * 32000 * 4 * 3);
  EXPECT_EQ(recompute_chunk_rows(c, 0), (int64_t{1} << 25) / 32000);
  EXPECT_EQ(logprob_bytes(c, 5000, true, 0), recompute_chunk_rows(c, 0) * 32000LL * 4 * 2 + 5000 * 16);
  EXPECT_EQ(logprob_bytes(c, 10, true, 0), 10LL * 32000 * 4 * 2 + 10 * 16);  // fewer rows than a chunk
  MemoryLevers bad;
  bad.checkpoint_every = 0;
  EXPECT_THROW(bad.validate(), Error);
}

TEST(LogprobRecompute, RejectsANegativeChunk) {
  CausalLM m = tiny_model("qwen2");
  EXPECT_THROW(m->set_logprob_recompute(true, -1), Error);
}

}  // namespace
}  // namespace rlf

namespace rlf {
namespace {

// Large fp32 tables (model/grad_in_place.h): the embedding lookup's and the
// chunked classifier's weight gradients summed into .grad itself equal the
// engine's usual sums to float rounding, over two backward passes (two
// micro-batches), into the one .grad tensor; a smaller table takes the usual path.
TEST(GradInPlace, EmbeddingAndChunkedClassifierGradientsMatchTheUsualPath) {
  const int64_t V = 65536, D = 256;  // 2^24 elements
  torch::manual_seed(3);
  auto w = (torch::randn({V, D}) * 0.02).requires_grad_(true);
  auto ref = w.detach().clone().requires_grad_(true);
  ASSERT_TRUE(grad_in_place(w));
  EXPECT_FALSE(grad_in_place(torch::zeros({8, 4}).requires_grad_(true)));
  EXPECT_FALSE(grad_in_place(w.detach()));
  const int64_t B = 2, T = 5;
  const void* first = nullptr;
  // The engine hands a leaf's gradient through its hooks; summed in place, nothing passes them.
  int engine_grads = 0, engine_grads_ref = 0;
  w.register_hook([&](const torch::Tensor&) { ++engine_grads; });
  ref.register_hook([&](const torch::Tensor&) { ++engine_grads_ref; });
  for (int pass = 0; pass < 2; ++pass) {
    auto ids = torch::randint(0, V, {B, T}, torch::kInt64);
    ids[0][1] = ids[1][3];  // a repeated row sums
    auto targets = torch::randint(0, V, {B, T}, torch::kInt64);
    auto mix = torch::randn({D, D}) * 0.1;
    // lookup -> mix -> classifier (tied: the same table) -> log-probs of targets
    auto loss_of = [&](const torch::Tensor& table, bool chunked) {
      auto h = (chunked ? embedding_lookup(table, ids) : torch::embedding(table, ids)).matmul(mix);
      torch::Tensor lp;
      if (chunked) {
        ClassifierHead head = [&](const torch::Tensor& z, int64_t t0, int64_t n) {
          auto t = targets.narrow(1, t0, n).unsqueeze(-1);
          return std::vector<torch::Tensor>{z.gather(-1, t).squeeze(-1) - z.logsumexp(-1)};
        };
        lp = chunked_classifier(head, h, table, 2)[0];
      } else {
        auto z = torch::nn::functional::linear(h, table);
        lp = z.gather(-1, targets.unsqueeze(-1)).squeeze(-1) - z.logsumexp(-1);
      }
      return -lp.sum();
    };
    loss_of(w, true).backward();
    loss_of(ref, false).backward();
    ASSERT_TRUE(w.grad().defined());
    if (pass == 0) first = w.grad().data_ptr();
    EXPECT_EQ(w.grad().data_ptr(), first) << "the one .grad tensor, summed into";
    const double scale = std::max(1e-3, ref.grad().abs().max().item<double>());
    EXPECT_LE(test::max_diff(w.grad(), ref.grad()) / scale, 1e-5) << "pass " << pass;
    EXPECT_GT(ref.grad().abs().max().item<double>(), 1e-4);
  }
  EXPECT_EQ(engine_grads, 0);
  EXPECT_GT(engine_grads_ref, 0);
}

}  // namespace
}  // namespace rlf

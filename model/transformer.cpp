#include "model/transformer.h"

#include "algorithms/distill_divergence.h"
#include "algorithms/entropy.h"
#include "model/cpu_bf16_linear.h"
#include "model/cpu_fast_forward.h"
#include "model/cpu_kernels.h"
#include "model/chunked_classifier.h"
#include "model/kept_logits.h"
#include "model/grad_in_place.h"
#include "model/recompute.h"

#include <cmath>
#include <limits>

#include "util/error.h"

namespace rlf {

// ---- RMSNorm ---------------------------------------------------------------

RMSNormImpl::RMSNormImpl(int64_t dim, double eps, bool unit_offset, bool scale_fp32)
    : eps_(eps), unit_offset_(unit_offset), scale_fp32_(scale_fp32) {
  weight = register_parameter("weight", unit_offset ? torch::zeros({dim}) : torch::ones({dim}));
}

torch::Tensor RMSNormImpl::scale() const {
  return unit_offset_ ? weight.to(torch::kFloat32) + 1.0 : weight;  // (as forward: 1 + w not rounded to bf16)
}

torch::Tensor RMSNormImpl::forward(const torch::Tensor& x) {
  // As in transformers: normalise in fp32; Llama casts back, then scales;
  // Gemma and OLMo 2 scale in fp32, then cast.
  auto h = x.to(torch::kFloat32);
  auto variance = h.pow(2).mean(-1, /*keepdim=*/true);
  h = h * torch::rsqrt(variance + eps_);
  if (scale_fp32_) {
    auto w = weight.to(torch::kFloat32);
    return (h * (unit_offset_ ? w + 1.0 : w)).to(x.scalar_type());
  }
  return scale() * h.to(x.scalar_type());
}

// ---- Attention -------------------------------------------------------------

AttentionImpl::AttentionImpl(const ModelConfig& c, int64_t layer)
    : qk_norm(c.family().qk_norm),
      spec(c.layer_attention(layer)),
      scale(c.attention_scale()),
      softcap(c.attn_logit_softcapping),
      n_heads(c.num_attention_heads),
      n_kv_heads(c.num_key_value_heads),
      head_dim(c.resolved_head_dim()) {
  const Family& f = c.family();
  const int64_t d = c.hidden_size, q = n_heads * head_dim, kv = n_kv_heads * head_dim;
  auto lin = [](int64_t in, int64_t out, bool bias) { return torch::nn::LinearOptions(in, out).bias(bias); };
  if (f.fused_qkv) {
    qkv_proj = register_module("qkv_proj", torch::nn::Linear(lin(d, q + 2 * kv, c.attention_bias)));
  } else {
    q_proj = register_module("q_proj", torch::nn::Linear(lin(d, q, c.attention_bias)));
    k_proj = register_module("k_proj", torch::nn::Linear(lin(d, kv, c.attention_bias)));
    v_proj = register_module("v_proj", torch::nn::Linear(lin(d, kv, c.attention_bias)));
  }
  o_proj = register_module("o_proj", torch::nn::Linear(lin(q, d, c.o_bias)));
  if (qk_norm != QkNorm::None) {
    const bool whole = qk_norm == QkNorm::Whole;
    q_norm = register_module("q_norm", RMSNorm(whole ? q : head_dim, c.rms_norm_eps, f.norm_unit_offset,
                                               f.norm_scale_fp32));
    k_norm = register_module("k_norm", RMSNorm(whole ? kv : head_dim, c.rms_norm_eps, f.norm_unit_offset,
                                               f.norm_scale_fp32));
  }
}

std::tuple<torch::Tensor, torch::Tensor, torch::Tensor> AttentionImpl::project_qkv(const torch::Tensor& x) {
  if (qkv_proj.is_empty())
    return {lora_project(q_proj, q_lora, x), lora_project(k_proj, k_lora, x), lora_project(v_proj, v_lora, x)};
  auto qkv = lora_project(qkv_proj, qkv_lora, x);
  const int64_t q = n_heads * head_dim, kv = n_kv_heads * head_dim;
  return {qkv.narrow(-1, 0, q), qkv.narrow(-1, q, kv), qkv.narrow(-1, q + kv, kv)};
}

namespace {

// Keys (or values) [B, K, S, hd] of positions [0, S) for rows that may read
// their first positions from a shared prefix: a copy, prefix then own slots,
// zeros past what a row holds (positions no query of it sees).
torch::Tensor with_prefixes(const KVCache& cache, int64_t layer, const torch::Tensor& own, int64_t S, bool values) {
  const int64_t B = own.size(0);
  auto out = torch::zeros({B, own.size(1), S, own.size(3)}, own.options());
  for (int64_t b = 0; b < B; ++b) {
    const KVCache* pre = cache.prefix(b);
    const int64_t P = pre ? std::min(pre->max_len(), S) : 0;
    auto row = out.select(0, b);
    if (P > 0) {
      const torch::Tensor& store = values ? pre->values(layer) : pre->keys(layer);
      row.narrow(1, 0, P).copy_(store.select(0, 0).narrow(1, 0, P));
    }
    const int64_t m = std::min(S - P, own.size(2));
    if (m > 0) row.narrow(1, P, m).copy_(own.select(0, b).narrow(1, 0, m));
  }
  return out;
}

}  // namespace

torch::Tensor tokens_to_grid(const torch::Tensor& x, const torch::Tensor& tokens, int64_t cells) {
  const int64_t C = x.size(-1);
  return torch::zeros({cells, C}, x.options()).index_copy(0, tokens, x.reshape({-1, C}));
}

torch::Tensor AttentionImpl::forward(const torch::Tensor& x, const AttentionContext& ctx, KVCache* cache,
                                     int64_t layer) {
  const bool packed = ctx.tokens.defined();  // x [1, N, D]: the grid's tokens concatenated
  const int64_t B = packed ? ctx.grid_rows : x.size(0), T = packed ? ctx.grid_cols : x.size(1);
  const int64_t K = n_kv_heads, G = n_heads / n_kv_heads, hd = head_dim;
  auto [q, k, v] = project_qkv(x);  // [B, T, H*hd], [B, T, K*hd], [B, T, K*hd]
  if (qk_norm == QkNorm::Whole) q = q_norm(q), k = k_norm(k);
  if (packed) {  // back on the grid: one sequence per row
    q = tokens_to_grid(q, ctx.tokens, B * T);
    k = tokens_to_grid(k, ctx.tokens, B * T);
    v = tokens_to_grid(v, ctx.tokens, B * T);
  }
  q = q.reshape({B, T, n_heads, hd});
  k = k.reshape({B, T, K, hd});
  v = v.reshape({B, T, K, hd});
  if (qk_norm == QkNorm::PerHead) q = q_norm(q), k = k_norm(k);
  if (spec.rope >= 0) {
    const auto& [cos, sin] = ctx.rope[static_cast<size_t>(spec.rope)];
    q = RotaryEmbedding::apply(q, cos, sin);
    k = RotaryEmbedding::apply(k, cos, sin);
  }
  k = k.transpose(1, 2);  // [B, K, T, hd]
  v = v.transpose(1, 2);  // [B, K, T, hd]

  torch::Tensor keys = k, values = v;  // [B, K, S, hd]
  if (cache) {
    // Write this call's keys at their slots, then read positions [0, S).
    torch::Tensor& cache_k = cache->keys(layer);
    torch::Tensor& cache_v = cache->values(layer);
    const bool shared = ctx.slots.defined();
    auto idx = (shared ? ctx.slots : ctx.positions).view({B, 1, T, 1}).expand({B, K, T, hd});
    cache_k.scatter_(2, idx, k);
    cache_v.scatter_(2, idx, v);
    keys = shared ? with_prefixes(*cache, layer, cache_k, ctx.n_keys, false) : cache_k.narrow(2, 0, ctx.n_keys);
    values = shared ? with_prefixes(*cache, layer, cache_v, ctx.n_keys, true) : cache_v.narrow(2, 0, ctx.n_keys);
  }
  const int64_t S = keys.size(2);
  // Queries grouped by their kv head: [B, K, G*T, hd], so no key/value repetition.
  auto qg = q.view({B, T, K, G, hd}).permute({0, 2, 3, 1, 4}).reshape({B, K, G * T, hd});
  auto scores = matmul_layer(qg, keys.transpose(2, 3)) * scale;  // [B, K, G*T, S]
  if (softcap > 0) scores = torch::tanh(scores / softcap) * softcap;
  // Softmax in fp32 (as transformers does), back to the compute dtype.
  const torch::Tensor& blocked = ctx.blocked.at(spec.window);
  auto probs = torch::softmax(scores.view({B, K, G, T, S}).to(torch::kFloat32).masked_fill(blocked, -INFINITY), -1);
  // A query that sees no key (its softmax is NaN) attends to nothing: 0, as the fast path.
  if (auto e = ctx.empty.find(spec.window); e != ctx.empty.end()) probs = probs.masked_fill(e->second, 0.0);
  probs = probs.to(x.scalar_type());                                            // [B, K, G, T, S]
  auto out = matmul_layer(probs.view({B, K, G * T, S}), values);                // [B, K, G*T, hd]
  out = out.view({B, K, G, T, hd}).permute({0, 3, 1, 2, 4}).reshape({B, T, n_heads * hd});
  if (packed) out = out.reshape({B * T, n_heads * hd}).index_select(0, ctx.tokens).unsqueeze(0);
  return lora_project(o_proj, o_lora, out);
}

// ---- MLP / layer -----------------------------------------------------------

MLPImpl::MLPImpl(const ModelConfig& c) : intermediate_size(c.intermediate_size) {
  auto lin = [&](int64_t in, int64_t out) { return torch::nn::LinearOptions(in, out).bias(c.mlp_bias); };
  const int64_t D = c.hidden_size, I = c.intermediate_size;
  if (c.family().fused_gate_up) {
    gate_up_proj = register_module("gate_up_proj", torch::nn::Linear(lin(D, 2 * I)));
  } else {
    gate_proj = register_module("gate_proj", torch::nn::Linear(lin(D, I)));
    up_proj = register_module("up_proj", torch::nn::Linear(lin(D, I)));
  }
  down_proj = register_module("down_proj", torch::nn::Linear(lin(I, D)));
  act = c.hidden_act == "gelu_pytorch_tanh" ? cpu::GluActivation::GeluTanh : cpu::GluActivation::Silu;
}

std::pair<torch::Tensor, torch::Tensor> MLPImpl::project_gate_up(const torch::Tensor& x) {
  if (gate_up_proj.is_empty()) return {lora_project(gate_proj, gate_lora, x), lora_project(up_proj, up_lora, x)};
  auto gu = lora_project(gate_up_proj, gate_up_lora, x);
  return {gu.narrow(-1, 0, intermediate_size), gu.narrow(-1, intermediate_size, intermediate_size)};
}

torch::Tensor MLPImpl::forward(const torch::Tensor& x) {
  auto [g, u] = project_gate_up(x);
  auto a = act == cpu::GluActivation::GeluTanh ? torch::gelu(g, "tanh") : torch::silu(g);
  return lora_project(down_proj, down_lora, a * u);
}

DecoderLayerImpl::DecoderLayerImpl(const ModelConfig& c, int64_t layer) {
  const Family& f = c.family();
  self_attn = register_module("self_attn", Attention(c, layer));
  mlp = register_module("mlp", MLP(c));
  auto norm = [&](const char* name) {
    return register_module(name, RMSNorm(c.hidden_size, c.rms_norm_eps, f.norm_unit_offset, f.norm_scale_fp32));
  };
  switch (f.norms) {
    case NormPlacement::Pre:
      attn_in = norm("input_layernorm");
      mlp_in = norm("post_attention_layernorm");
      break;
    case NormPlacement::Sandwich:
      attn_in = norm("input_layernorm");
      attn_out = norm("post_attention_layernorm");
      mlp_in = norm("pre_feedforward_layernorm");
      mlp_out = norm("post_feedforward_layernorm");
      break;
    case NormPlacement::Post:
      attn_out = norm("post_attention_layernorm");
      mlp_out = norm("post_feedforward_layernorm");
      break;
  }
}

torch::Tensor DecoderLayerImpl::forward(const torch::Tensor& x, const AttentionContext& ctx, KVCache* cache,
                                        int64_t layer) {
  auto a = self_attn->forward(attn_in ? attn_in(x) : x, ctx, cache, layer);
  if (attn_out) a = attn_out(a);
  auto h = x + a;
  auto m = mlp(mlp_in ? mlp_in(h) : h);
  if (mlp_out) m = mlp_out(m);
  return h + m;
}

std::vector<Projection> DecoderLayerImpl::projections() {
  std::vector<Projection> out;
  auto& a = *self_attn;
  auto& m = *mlp;
  auto add = [&](const char* name, const char* parent, torch::nn::Linear& lin, LoraSlot& slot) {
    if (!lin.is_empty()) out.push_back({name, std::string(parent) + "." + name, &lin, &slot});
  };
  add("q_proj", "self_attn", a.q_proj, a.q_lora);
  add("k_proj", "self_attn", a.k_proj, a.k_lora);
  add("v_proj", "self_attn", a.v_proj, a.v_lora);
  add("qkv_proj", "self_attn", a.qkv_proj, a.qkv_lora);
  add("o_proj", "self_attn", a.o_proj, a.o_lora);
  add("gate_proj", "mlp", m.gate_proj, m.gate_lora);
  add("up_proj", "mlp", m.up_proj, m.up_lora);
  add("gate_up_proj", "mlp", m.gate_up_proj, m.gate_up_lora);
  add("down_proj", "mlp", m.down_proj, m.down_lora);
  return out;
}

DecoderStackImpl::DecoderStackImpl(const ModelConfig& c) {
  const Family& f = c.family();
  embed_tokens = register_module("embed_tokens", torch::nn::Embedding(c.vocab_size, c.hidden_size));
  layers = register_module("layers", torch::nn::ModuleList());
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) layers->push_back(DecoderLayer(c, i));
  norm = register_module("norm", RMSNorm(c.hidden_size, c.rms_norm_eps, f.norm_unit_offset, f.norm_scale_fp32));
}

// ---- CausalLM --------------------------------------------------------------

CausalLMImpl::CausalLMImpl(const ModelConfig& config) : config_(config) {
  config_.validate();
  model = register_module("model", DecoderStack(config_));
  if (config_.is_classifier())
    score = register_module("score", torch::nn::Linear(torch::nn::LinearOptions(config_.hidden_size, config_.num_labels).bias(false)));
  else if (!config_.tie_word_embeddings)
    lm_head = register_module("lm_head", torch::nn::Linear(torch::nn::LinearOptions(config_.hidden_size, config_.vocab_size).bias(false)));
  refresh_rope();
}

torch::ScalarType CausalLMImpl::dtype() const { return model->norm->weight.scalar_type(); }
torch::Device CausalLMImpl::device() const { return model->norm->weight.device(); }

void CausalLMImpl::refresh_rope() {
  ropes_.clear();
  for (int r = 0; r < config_.n_rope_tables(); ++r)
    ropes_.emplace_back(config_.rope(r), config_.rotary_dim(), config_.max_position_embeddings, device());
}

torch::Tensor CausalLMImpl::embed(const torch::Tensor& ids, c10::optional<torch::ScalarType> as) {
  auto h = embedding_lookup(model->embed_tokens->weight, ids);  // a large table's gradient straight into .grad
  if (as && *as != h.scalar_type()) h = h.to(*as);
  if (!config_.family().embed_scaled) return h;
  // transformers: a float32 scalar sqrt(hidden_size), cast to the weights' dtype.
  const float s = static_cast<float>(std::sqrt(static_cast<double>(config_.hidden_size)));
  return h * torch::tensor(s, torch::TensorOptions().dtype(torch::kFloat32)).to(h.device(), h.scalar_type());
}

torch::Tensor CausalLMImpl::forward_hidden(const torch::Tensor& input_ids, const torch::Tensor& positions,
                                           KVCache* cache, const torch::Tensor& key_mask,
                                           const torch::Tensor& tokens) {
  check(input_ids.dim() == 2 && positions.sizes() == input_ids.sizes(),
        "CausalLM::forward_hidden: input_ids and positions must both be [B, T]");
  if (tokens.defined()) {
    check(!cache && key_mask.defined(),
          "CausalLM::forward_hidden: a padding-free forward (tokens) takes a key_mask and no KV cache");
    check(tokens.dim() == 1 && tokens.numel() > 0 && tokens.scalar_type() == torch::kInt64 &&
              tokens.device() == input_ids.device(),
          "CausalLM::forward_hidden: tokens must be a non-empty [N] int64 index on the inputs' device");
  }
  if (cache) check(cache->n_rows() == input_ids.size(0), "CausalLM::forward_hidden: cache has ", cache->n_rows(),
                   " rows for a batch of ", input_ids.size(0));
  check(positions.numel() > 0, "CausalLM::forward_hidden: empty input");
  check(positions.device() == device(), "positions are on ", positions.device(), " but the model is on ", device());
  const int64_t max_pos = positions.max().item<int64_t>();  // a host sync (rows with shared prefixes add two)
  int64_t limit = ropes_[0].max_positions();
  for (const auto& r : ropes_) limit = std::min(limit, r.max_positions());
  check(max_pos < limit, "position ", max_pos, " is beyond max_position_embeddings (", config_.max_position_embeddings,
        limit != config_.max_position_embeddings ? ", " + std::to_string(limit) + " with dynamic RoPE scaling" : "",
        "): shorten the prompt or the number of new tokens");
  torch::Tensor slots;  // with shared prefixes: [B, T] own slots (positions minus the row's prefix length)
  if (cache) {
    const int64_t B = input_ids.size(0);
    std::vector<int64_t> plen(static_cast<size_t>(B));
    bool shared = false;
    for (int64_t b = 0; b < B; ++b) shared |= (plen[b] = cache->prefix_len(b)) > 0;
    if (shared) {
      slots = positions - torch::tensor(plen, torch::kInt64).to(positions.device()).view({B, 1});
      check(slots.min().item<int64_t>() >= 0, "a position inside a row's shared prefix was fed again");
    }
    const int64_t max_slot = shared ? slots.max().item<int64_t>() : max_pos;
    check(max_slot < cache->max_len(), "position ", max_pos, " is beyond the KV cache length (", cache->max_len(),
          shared ? " slots after the row's shared prefix)" : ")");
  }
  if (fast_cpu_path_applies(cache))
    return forward_hidden_cpu_fast(input_ids, positions, cache, key_mask, max_pos, tokens);
  if (cache)
    check(cache->keys(0).scalar_type() == dtype(), "CausalLM::forward_hidden: the KV cache holds ",
          dtype_name(cache->keys(0).scalar_type()), " but the model is ", dtype_name(dtype()),
          ", outside the CPU fast path's decoding (grad mode on, or the fast path off after the cache was made)");
  const int64_t B = input_ids.size(0), T = input_ids.size(1);
  AttentionContext ctx;
  for (const RotaryEmbedding& r : ropes_) ctx.rope.push_back(RotaryEmbedding::lookup(r.tables(max_pos), positions, dtype()));
  ctx.positions = positions;
  ctx.slots = slots;
  torch::Tensor key_pos, query_pos;  // [1 or B, 1, S], [B, T, 1]
  torch::Tensor blocked;             // [B, T, S]: causal (and padding)
  if (cache) {
    ctx.n_keys = max_pos + 1;
    key_pos = torch::arange(ctx.n_keys, positions.options()).view({1, 1, ctx.n_keys});
    query_pos = positions.view({B, T, 1});
    blocked = key_pos > query_pos;
  } else {
    ctx.n_keys = T;
    key_pos = positions.view({B, 1, T});
    query_pos = positions.view({B, T, 1});
    blocked = key_pos > query_pos;  // causal by position
    if (key_mask.defined()) blocked = blocked | key_mask.logical_not().view({B, 1, T});
  }
  for (int64_t l = 0; l < config_.num_hidden_layers; ++l) {
    const int64_t w = config_.layer_attention(l).window;
    if (ctx.blocked.count(w)) continue;
    // A sliding layer's query at position p sees keys at p - w < s <= p.
    auto b = w > 0 ? (blocked | (key_pos <= query_pos - w)) : blocked;
    ctx.blocked[w] = b.view({B, 1, 1, T, ctx.n_keys});
    if (key_mask.defined() && !cache) {  // only padding can leave a query without keys
      auto none = b.all(-1);             // [B, T]
      if (none.any().item<bool>()) ctx.empty[w] = none.view({B, 1, 1, T, 1});
    }
  }
  ctx.tokens = tokens;
  ctx.grid_rows = B, ctx.grid_cols = T;
  auto h = embed(tokens.defined() ? input_ids.reshape({-1}).index_select(0, tokens).unsqueeze(0) : input_ids);
  if (cache) {
    for (int64_t l = 0; l < config_.num_hidden_layers; ++l) h = layer(l).forward(h, ctx, cache, l);
  } else {
    // (ctx by value: a checkpointed segment runs again in backward)
    h = run_layers(h, T, B * T, false, [this, ctx](int64_t l, const torch::Tensor& x) { return layer(l).forward(x, ctx, nullptr, l); });
  }
  return model->norm(h);
}

void CausalLMImpl::set_checkpoint_layers(int64_t layers_per_segment) {
  check(layers_per_segment >= 0, "set_checkpoint_layers: ", layers_per_segment,
        " layers per segment (use 0 for off, or a positive count)");
  levers_.checkpoint = layers_per_segment > 0 ? CheckpointMode::Layers : CheckpointMode::None;
  if (layers_per_segment > 0) levers_.checkpoint_every = layers_per_segment;
}

void CausalLMImpl::set_memory_levers(const MemoryLevers& levers) {
  levers.validate();
  levers_ = levers;
}

int64_t CausalLMImpl::checkpoint_segment(const torch::Tensor& h, int64_t seq_len, int64_t grid_cells,
                                         bool fused) const {
  if (!torch::GradMode::is_enabled()) return 0;
  switch (levers_.checkpoint) {
    case CheckpointMode::None: return 0;
    case CheckpointMode::Layers: return levers_.checkpoint_every;
    case CheckpointMode::Auto: break;
  }
  const int64_t tokens = h.numel() / std::max<int64_t>(1, h.size(-1));
  const int64_t kept =
      layer_activation_bytes(config_, tokens, seq_len, h.element_size(), fused, grid_cells) * config_.num_hidden_layers;
  return levers_.auto_activation_bytes > 0 && kept >= levers_.auto_activation_bytes ? levers_.checkpoint_every : 0;
}

torch::Tensor CausalLMImpl::run_layers(torch::Tensor h, int64_t seq_len, int64_t grid_cells, bool fused,
                                       const LayerFn& layer_fn) {
  const int64_t L = config_.num_hidden_layers, k = checkpoint_segment(h, seq_len, grid_cells, fused);
  if (k == 0) {
    for (int64_t l = 0; l < L; ++l) h = layer_fn(l, h);
    return h;
  }
  ++lever_uses_.checkpointed_forwards;
  std::vector<torch::Generator> generators;  // LoRA dropout's masks, replayed by the recomputation
  if (lora && lora->options.dropout > 0) generators.push_back(lora->dropout_gen);
  for (int64_t l0 = 0; l0 < L; l0 += k) {
    const int64_t l1 = std::min(L, l0 + k);
    std::vector<torch::Tensor> params;
    for (int64_t l = l0; l < l1; ++l)
      for (const auto& p : layer(l).parameters()) params.push_back(p);
    auto segment = [layer_fn, l0, l1](const std::vector<torch::Tensor>& in) {
      torch::Tensor x = in[0];
      for (int64_t l = l0; l < l1; ++l) x = layer_fn(l, x);
      return std::vector<torch::Tensor>{x};
    };
    h = recompute(segment, {h}, params, generators)[0];
  }
  return h;
}

const torch::Tensor& CausalLMImpl::classifier_weight() const {
  return lm_head ? lm_head->weight : model->embed_tokens->weight;
}

void CausalLMImpl::require_lm_head() const {
  check(!config_.is_classifier(), "this model is a ", config_.architecture,
        " (a reward model with a score head): it scores sequences and cannot generate or give token log-probs");
}

torch::Tensor CausalLMImpl::logits(const torch::Tensor& hidden) {
  require_lm_head();
  const torch::Tensor& w = classifier_weight();
  const int64_t rows = hidden.numel() / std::max<int64_t>(1, hidden.size(-1));
  const double cap = config_.final_logit_softcapping;
  const bool fp32_decoding = hidden.is_cpu() && hidden.scalar_type() == torch::kFloat32 &&
                             !torch::GradMode::is_enabled() && fast_cpu_path_applies();
  // bf16 weights on the fast path's decoding (fp32 hidden states): fp32 logits
  // from the widened weight, whatever the rows.
  const bool bf16_decoding = hidden.is_cpu() && hidden.scalar_type() == torch::kFloat32 &&
                             w.scalar_type() == torch::kBFloat16 && !torch::GradMode::is_enabled();
  if (fp32_decoding || bf16_decoding) {
    // Decoding: the packed classifier (pack_for_decoding), else for a few
    // rows the matrix-vector kernel, which reads the vocabulary's weights once.
    const float* panels = packed_.find(w);
    if (panels || rows <= cpu::kMatmulWtMaxRows || bf16_decoding) {
      auto out_sizes = hidden.sizes().vec();
      out_sizes.back() = w.size(0);
      auto out = torch::empty({rows, w.size(0)}, hidden.options());
      matmul_wt_into(hidden.reshape({rows, hidden.size(-1)}), w, torch::Tensor(), out, panels);
      if (cap > 0) out.div_(cap).tanh_().mul_(cap);
      return out.view(out_sizes);
    }
  }
  return softcap_logits(linear_layer(hidden, w));
}

torch::Tensor CausalLMImpl::softcap_logits(const torch::Tensor& z) const {
  // Gemma 2/3: logits / c, tanh, × c, in the model's dtype (as transformers).
  const double cap = config_.final_logit_softcapping;
  return cap > 0 ? torch::tanh(z / cap) * cap : z;
}

torch::Tensor CausalLMImpl::scores(const torch::Tensor& hidden) {
  if (!v_head.is_empty()) return v_head(hidden).to(torch::kFloat32);
  check(config_.is_classifier(), "this model is a ", config_.architecture, ", not a reward model: it has no score head");
  return score(hidden).to(torch::kFloat32);
}

void CausalLMImpl::add_value_head() {
  check(!config_.is_classifier(), "add_value_head: ", config_.architecture, " is a classifier (it has a score head)");
  check(v_head.is_empty(), "add_value_head: the model already has a value head");
  v_head = register_module("v_head", torch::nn::Linear(torch::nn::LinearOptions(config_.hidden_size, 1).bias(false)));
  v_head->to(device(), dtype());
  torch::NoGradGuard ng;
  v_head->weight.zero_();
}

namespace {

// Sampling-mask replay of one chunk: logprobs [B, n] (the whole vocabulary's)
// replaced, where keep_ids [B, n, k] holds any id >= 0, by the target's
// log-prob renormalised over those ids' logits (lg [B, n, V] fp32). Rows
// without ids gather id 0 unmasked so every logsumexp stays finite (and its
// gradient, multiplied by the untaken branch's zero, too).
torch::Tensor renormalise_over_kept(const torch::Tensor& lg, const torch::Tensor& targets, const torch::Tensor& keep_ids,
                                    const torch::Tensor& logprobs) {
  const auto valid = keep_ids >= 0;
  const auto has = valid.any(-1);  // [B, n]
  const auto kept = lg.gather(-1, keep_ids.clamp_min(0))
                        .masked_fill(~valid & has.unsqueeze(-1), -std::numeric_limits<float>::infinity());
  const auto target = lg.gather(-1, targets.unsqueeze(-1)).squeeze(-1);
  return torch::where(has, target - torch::logsumexp(kept, -1), logprobs);
}

}  // namespace

torch::Tensor CausalLMImpl::token_logprobs(const torch::Tensor& hidden, const torch::Tensor& targets, int64_t from,
                                           const torch::Tensor& keep_ids) {
  return token_logprobs_impl(hidden, targets, nullptr, false, from, {}, nullptr, keep_ids);
}

std::pair<torch::Tensor, torch::Tensor> CausalLMImpl::token_logprobs_entropy(const torch::Tensor& hidden,
                                                                             const torch::Tensor& targets,
                                                                             bool entropy_grad, int64_t from,
                                                                             const torch::Tensor& keep_ids) {
  torch::Tensor entropy;
  auto lp = token_logprobs_impl(hidden, targets, &entropy, entropy_grad, from, {}, nullptr, keep_ids);
  return {lp, entropy};
}

torch::Tensor CausalLMImpl::token_logprobs_selected(const torch::Tensor& hidden, const torch::Tensor& targets,
                                                    const torch::Tensor& select_ids, torch::Tensor* selected,
                                                    torch::Tensor* entropy, bool entropy_grad, int64_t from,
                                                    const torch::Tensor& keep_ids) {
  check(selected && select_ids.dim() == 3 && select_ids.size(0) == hidden.size(0) && select_ids.size(1) == hidden.size(1),
        "token_logprobs_selected: select_ids [B, T, k] expected");
  return token_logprobs_impl(hidden, targets, entropy, entropy_grad, from, select_ids, selected, keep_ids);
}

void CausalLMImpl::set_logprob_recompute(bool on, int64_t chunk_rows) {
  check(chunk_rows >= 0, "set_logprob_recompute: chunk_rows = ", chunk_rows, " (use 0 for automatic, or a positive count)");
  levers_.logprob_recompute = on ? LeverMode::On : LeverMode::Off;
  levers_.logprob_chunk_rows = chunk_rows;
}

CausalLMImpl::LogprobChunk CausalLMImpl::logprob_head(const torch::Tensor& logits, const torch::Tensor& targets,
                                                      const torch::Tensor& select_ids, bool entropy,
                                                      bool entropy_grad, const torch::Tensor& keep_ids) {
  const auto lg = logits.to(torch::kFloat32);  // once, for both
  LogprobChunk out = logprob_head_full(lg, targets, select_ids, entropy, entropy_grad);
  if (keep_ids.defined()) out.logprobs = renormalise_over_kept(lg, targets, keep_ids, out.logprobs);
  return out;
}

CausalLMImpl::LogprobChunk CausalLMImpl::logprob_head_full(const torch::Tensor& logits, const torch::Tensor& targets,
                                                           const torch::Tensor& select_ids, bool entropy,
                                                           bool entropy_grad) {
  LogprobChunk out;
  const auto lg = logits.to(torch::kFloat32);  // [B, n, V]
  if (select_ids.defined()) out.selected = algo::bucket_logprobs(lg, select_ids);
  const int64_t B = lg.size(0), n = lg.size(1), V = lg.size(2);
  if (fast_cpu_path_ && lg.device().is_cpu() && !(entropy && entropy_grad)) {
    // One pass per row forward, one backward (the sampler's normaliser); the entropy as a by-product.
    out.logprobs = fast_token_logprobs(lg.reshape({B * n, V}), targets.reshape({B * n}),
                                       entropy ? &out.entropy : nullptr).view({B, n});
    if (entropy) out.entropy = out.entropy.view({B, n});
    return out;
  }
  auto lse = torch::logsumexp(lg, -1);  // [B, n]
  out.logprobs = lg.gather(-1, targets.unsqueeze(-1)).squeeze(-1) - lse;
  if (entropy) {
    // The entropy's implementation (algorithms/entropy.h; the kernel above is tested against it); the
    // caller already chunks.
    if (entropy_grad) {
      out.entropy = algo::entropy_from_logits(lg, 0);
    } else {
      torch::NoGradGuard ng;
      out.entropy = algo::entropy_from_logits(lg.detach(), 0);
    }
  }
  return out;
}

CausalLMImpl::LogprobChunk CausalLMImpl::logprobs_recomputed(const torch::Tensor& hidden, const torch::Tensor& targets,
                                                             const torch::Tensor& select_ids, bool entropy,
                                                             bool entropy_grad, int64_t chunk,
                                                             const torch::Tensor& keep_ids) {
  // Outputs: log-probs, then the entropy and the selected buckets when asked.
  auto head = [this, targets, select_ids, entropy, entropy_grad, keep_ids](const torch::Tensor& z, int64_t t0,
                                                                           int64_t n) {
    // The recomputation (grad mode on) skips an entropy that only is logged.
    const bool again = torch::GradMode::is_enabled();
    LogprobChunk c = logprob_head(softcap_logits(z), targets.narrow(1, t0, n),
                                  select_ids.defined() ? select_ids.narrow(1, t0, n) : torch::Tensor(),
                                  entropy && (entropy_grad || !again), entropy_grad,
                                  keep_ids.defined() ? keep_ids.narrow(1, t0, n) : torch::Tensor());
    std::vector<torch::Tensor> out{c.logprobs};
    if (entropy) out.push_back(c.entropy);
    if (select_ids.defined()) out.push_back(c.selected);
    return out;
  };
  const auto out = chunked_classifier(head, hidden, classifier_weight(), chunk);
  LogprobChunk c;
  c.logprobs = out[0];
  if (entropy) c.entropy = entropy_grad ? out[1] : out[1].detach();
  if (select_ids.defined()) c.selected = out.back();
  return c;
}

CausalLMImpl::LogprobChunk CausalLMImpl::logprobs_over_kept_sets(const torch::Tensor& hidden,
                                                                 const torch::Tensor& targets,
                                                                 const torch::Tensor& keep_ids, bool entropy) {
  const int64_t B = hidden.size(0), n = hidden.size(1), D = hidden.size(2), K = keep_ids.size(2);
  const auto h = hidden.reshape({B * n, D});
  const auto tg = targets.reshape({B * n}).to(torch::kInt64);
  const auto keep = keep_ids.reshape({B * n, K});
  const auto valid = keep >= 0;
  const auto has = valid.any(-1);
  const auto with = has.nonzero().squeeze(-1).to(hidden.device()), without = (~has).nonzero().squeeze(-1).to(hidden.device());
  auto f32 = hidden.options().dtype(torch::kFloat32);
  torch::Tensor lp = torch::zeros({B * n}, f32), ent = entropy ? torch::zeros({B * n}, f32) : torch::Tensor();
  if (with.numel() > 0) {
    // Column 0: the target's logit; columns 1..K: the kept set's (padding -inf).
    const auto ids = torch::cat({tg.index_select(0, with).unsqueeze(-1), keep.index_select(0, with).clamp_min(0)}, 1);
    const auto z = softcap_logits(kept_logits(h.index_select(0, with), classifier_weight(), ids)).to(torch::kFloat32);
    const auto kz = z.narrow(1, 1, K).masked_fill(~valid.index_select(0, with), -std::numeric_limits<float>::infinity());
    const auto lse = torch::logsumexp(kz, -1);
    lp = lp.index_copy(0, with, z.select(1, 0) - lse);
    if (entropy) {
      torch::NoGradGuard ng;  // the kept set's entropy, -Σ p log p over the ids sampled from
      const auto logp = kz.detach() - lse.detach().unsqueeze(-1);
      ent.index_copy_(0, with, -(logp.exp() * logp.nan_to_num(0.0, 0.0, 0.0)).sum(-1));
    }
  }
  if (without.numel() > 0) {
    // Positions without a kept set (prompts, observations, padding, other contexts): the whole vocabulary.
    torch::Tensor e;
    const auto full = token_logprobs_impl(h.index_select(0, without).unsqueeze(0), tg.index_select(0, without).unsqueeze(0),
                                          entropy ? &e : nullptr, false, 0);
    lp = lp.index_copy(0, without, full.squeeze(0));
    if (entropy) ent.index_copy_(0, without, e.squeeze(0).detach());
  }
  LogprobChunk c;
  c.logprobs = lp.view({B, n});
  if (entropy) c.entropy = ent.view({B, n});
  return c;
}

torch::Tensor CausalLMImpl::token_logprobs_impl(const torch::Tensor& hidden, const torch::Tensor& targets,
                                                torch::Tensor* entropy, bool entropy_grad, int64_t from,
                                                const torch::Tensor& select_ids, torch::Tensor* selected,
                                                const torch::Tensor& keep_ids) {
  require_lm_head();
  check(!keep_ids.defined() || (keep_ids.dim() == 3 && keep_ids.size(0) == hidden.size(0) &&
                                keep_ids.size(1) == hidden.size(1) && keep_ids.scalar_type() == torch::kInt64),
        "token_logprobs: keep_ids must be [B, T, k] int64");
  const int64_t B = hidden.size(0), T = hidden.size(1);
  check(from >= 0 && from < std::max<int64_t>(T, 1), "token_logprobs: from = ", from, " outside the ", T, " positions");
  const int64_t V = config_.vocab_size;
  const bool wanted = levers_.logprob_recompute == LeverMode::On ||
                      (levers_.logprob_recompute == LeverMode::Auto && B * (T - from) * V >= levers_.auto_logits);
  const bool again = wanted && torch::GradMode::is_enabled() &&
                     (hidden.requires_grad() || classifier_weight().requires_grad());
  // Over kept sets, only the kept ids' logits are needed (no [B, T, V] to recompute).
  const bool over_kept = keep_ids.defined() && !selected && !(entropy && entropy_grad);
  if (again && !over_kept) ++lever_uses_.recomputed_logprob_calls;
  // Rows (B x positions) per chunk: without recompute, at most one [B, T, V]
  // fp32 tensor lives anyway; with it, a chunk of about 2^25 logits (128 MB
  // in fp32) bounds what backward holds at once.
  const int64_t rows = again                             ? recompute_chunk_rows(config_, levers_.logprob_chunk_rows)
                       : levers_.logprob_chunk_rows > 0 ? levers_.logprob_chunk_rows
                                                        : 8192;
  const int64_t chunk = std::max<int64_t>(1, rows / std::max<int64_t>(1, B));
  std::vector<torch::Tensor> parts, ent_parts, sel_parts;
  if (from > 0) {  // skipped columns: 0, outside the graph
    parts.push_back(torch::zeros({B, from}, hidden.options().dtype(torch::kFloat32)));
    if (entropy) ent_parts.push_back(parts.back());
    if (selected) sel_parts.push_back(torch::zeros({B, from, select_ids.size(2) + 1}, parts.back().options()));
  }
  auto add = [&](const LogprobChunk& c) {
    parts.push_back(c.logprobs);
    if (entropy) ent_parts.push_back(c.entropy);
    if (selected) sel_parts.push_back(c.selected);
  };
  if (over_kept) {
    const int64_t n = T - from;
    add(logprobs_over_kept_sets(hidden.narrow(1, from, n), targets.narrow(1, from, n), keep_ids.narrow(1, from, n),
                                entropy != nullptr));
  } else if (again) {
    const int64_t n = T - from;
    add(logprobs_recomputed(hidden.narrow(1, from, n), targets.narrow(1, from, n),
                            selected ? select_ids.narrow(1, from, n) : torch::Tensor(), entropy != nullptr,
                            entropy_grad, chunk, keep_ids.defined() ? keep_ids.narrow(1, from, n) : torch::Tensor()));
  }
  for (int64_t t0 = from; !over_kept && !again && t0 < T; t0 += chunk) {
    const int64_t n = std::min(chunk, T - t0);
    add(logprob_head(logits(hidden.narrow(1, t0, n)), targets.narrow(1, t0, n),
                     selected ? select_ids.narrow(1, t0, n) : torch::Tensor(), entropy != nullptr, entropy_grad,
                     keep_ids.defined() ? keep_ids.narrow(1, t0, n) : torch::Tensor()));
  }
  if (entropy) *entropy = ent_parts.size() == 1 ? ent_parts[0] : torch::cat(ent_parts, 1);
  if (selected) *selected = sel_parts.size() == 1 ? sel_parts[0] : torch::cat(sel_parts, 1);
  return parts.size() == 1 ? parts[0] : torch::cat(parts, 1);
}

torch::Tensor CausalLMImpl::forward(const torch::Tensor& input_ids) {
  auto positions = torch::arange(input_ids.size(1), input_ids.options()).unsqueeze(0).expand_as(input_ids).contiguous();
  return logits(forward_hidden(input_ids, positions));
}

void CausalLMImpl::init_random(uint64_t seed) {
  torch::NoGradGuard no_grad;
  auto gen = at::detail::createCPUGenerator(seed);
  const float norm_value = config_.family().norm_unit_offset ? 0.0f : 1.0f;  // the identity norm
  for (auto& p : named_parameters()) {
    const std::string& name = p.key();
    auto& t = p.value();
    torch::Tensor v;
    if (name.find("norm") != std::string::npos) v = torch::full(t.sizes(), norm_value, torch::kFloat32);
    else if (name.size() > 5 && name.substr(name.size() - 5) == ".bias") v = torch::zeros(t.sizes(), torch::kFloat32);
    else v = at::normal(0.0, 0.02, t.sizes(), gen, torch::TensorOptions().dtype(torch::kFloat32));
    t.copy_(v);
  }
}

torch::ScalarType parse_dtype(const std::string& name) {
  if (name == "fp32" || name == "float32" || name == "f32") return torch::kFloat32;
  if (name == "bf16" || name == "bfloat16") return torch::kBFloat16;
  if (name == "fp16" || name == "float16" || name == "f16") return torch::kFloat16;
  fail("unknown dtype '", name, "' (use fp32, bf16 or fp16)");
}

std::string dtype_name(torch::ScalarType t) {
  if (t == torch::kFloat32) return "fp32";
  if (t == torch::kBFloat16) return "bf16";
  if (t == torch::kFloat16) return "fp16";
  return c10::toString(t);
}

torch::Device parse_device(const std::string& name) {
  torch::Device d = torch::kCPU;
  try {
    d = torch::Device(name);
  } catch (const std::exception&) {
    fail("unknown device '", name, "' (use cpu, cuda or cuda:N)");
  }
  if (d.is_cuda()) check(torch::cuda::is_available(), "device '", name, "' requested but CUDA is not available in this build/machine");
  return d;
}

}  // namespace rlf

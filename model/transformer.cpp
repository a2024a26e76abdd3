#include "model/transformer.h"

#include "algorithms/entropy.h"
#include "model/cpu_fast_forward.h"
#include "model/cpu_kernels.h"

#include <cmath>

#include "util/error.h"

namespace rlf {

// ---- RMSNorm ---------------------------------------------------------------

RMSNormImpl::RMSNormImpl(int64_t dim, double eps) : eps_(eps) {
  weight = register_parameter("weight", torch::ones({dim}));
}

torch::Tensor RMSNormImpl::forward(const torch::Tensor& x) {
  // As in transformers: normalise in fp32, cast back, then scale.
  auto h = x.to(torch::kFloat32);
  auto variance = h.pow(2).mean(-1, /*keepdim=*/true);
  h = h * torch::rsqrt(variance + eps_);
  return weight * h.to(x.scalar_type());
}

// ---- Attention -------------------------------------------------------------

AttentionImpl::AttentionImpl(const ModelConfig& c)
    : n_heads_(c.num_attention_heads), n_kv_heads_(c.num_key_value_heads), head_dim_(c.resolved_head_dim()) {
  const int64_t d = c.hidden_size;
  auto lin = [](int64_t in, int64_t out, bool bias) { return torch::nn::LinearOptions(in, out).bias(bias); };
  q_proj = register_module("q_proj", torch::nn::Linear(lin(d, n_heads_ * head_dim_, c.attention_bias)));
  k_proj = register_module("k_proj", torch::nn::Linear(lin(d, n_kv_heads_ * head_dim_, c.attention_bias)));
  v_proj = register_module("v_proj", torch::nn::Linear(lin(d, n_kv_heads_ * head_dim_, c.attention_bias)));
  o_proj = register_module("o_proj", torch::nn::Linear(lin(n_heads_ * head_dim_, d, c.o_bias)));
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

torch::Tensor AttentionImpl::forward(const torch::Tensor& x, const AttentionContext& ctx, KVCache* cache,
                                     int64_t layer) {
  const int64_t B = x.size(0), T = x.size(1), K = n_kv_heads_, G = n_heads_ / n_kv_heads_, hd = head_dim_;
  auto q = RotaryEmbedding::apply(lora_project(q_proj, q_lora, x).view({B, T, n_heads_, hd}), ctx.cos, ctx.sin);  // [B, T, H, hd]
  auto k = RotaryEmbedding::apply(lora_project(k_proj, k_lora, x).view({B, T, K, hd}), ctx.cos, ctx.sin);         // [B, T, K, hd]
  auto v = lora_project(v_proj, v_lora, x).view({B, T, K, hd});                                                   // [B, T, K, hd]
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
  auto scores = torch::matmul(qg, keys.transpose(2, 3)) * (1.0 / std::sqrt(static_cast<double>(hd)));  // [B, K, G*T, S]
  // Softmax in fp32 (as transformers does), back to the compute dtype.
  auto probs = torch::softmax(scores.view({B, K, G, T, S}).to(torch::kFloat32).masked_fill(ctx.blocked, -INFINITY), -1)
                   .to(x.scalar_type());                                        // [B, K, G, T, S]
  auto out = torch::matmul(probs.view({B, K, G * T, S}), values);               // [B, K, G*T, hd]
  out = out.view({B, K, G, T, hd}).permute({0, 3, 1, 2, 4}).reshape({B, T, n_heads_ * hd});
  return lora_project(o_proj, o_lora, out);
}

// ---- MLP / layer -----------------------------------------------------------

MLPImpl::MLPImpl(const ModelConfig& c) {
  auto lin = [&](int64_t in, int64_t out) { return torch::nn::LinearOptions(in, out).bias(c.mlp_bias); };
  gate_proj = register_module("gate_proj", torch::nn::Linear(lin(c.hidden_size, c.intermediate_size)));
  up_proj = register_module("up_proj", torch::nn::Linear(lin(c.hidden_size, c.intermediate_size)));
  down_proj = register_module("down_proj", torch::nn::Linear(lin(c.intermediate_size, c.hidden_size)));
}

torch::Tensor MLPImpl::forward(const torch::Tensor& x) {
  return lora_project(down_proj, down_lora,
                      torch::silu(lora_project(gate_proj, gate_lora, x)) * lora_project(up_proj, up_lora, x));
}

DecoderLayerImpl::DecoderLayerImpl(const ModelConfig& c) {
  self_attn = register_module("self_attn", Attention(c));
  mlp = register_module("mlp", MLP(c));
  input_layernorm = register_module("input_layernorm", RMSNorm(c.hidden_size, c.rms_norm_eps));
  post_attention_layernorm = register_module("post_attention_layernorm", RMSNorm(c.hidden_size, c.rms_norm_eps));
}

torch::Tensor DecoderLayerImpl::forward(const torch::Tensor& x, const AttentionContext& ctx, KVCache* cache,
                                        int64_t layer) {
  auto h = x + self_attn->forward(input_layernorm(x), ctx, cache, layer);
  return h + mlp(post_attention_layernorm(h));
}

DecoderStackImpl::DecoderStackImpl(const ModelConfig& c) {
  embed_tokens = register_module("embed_tokens", torch::nn::Embedding(c.vocab_size, c.hidden_size));
  layers = register_module("layers", torch::nn::ModuleList());
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) layers->push_back(DecoderLayer(c));
  norm = register_module("norm", RMSNorm(c.hidden_size, c.rms_norm_eps));
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

void CausalLMImpl::refresh_rope() { rope_ = RotaryEmbedding(config_, config_.max_position_embeddings, device()); }

torch::Tensor CausalLMImpl::forward_hidden(const torch::Tensor& input_ids, const torch::Tensor& positions,
                                           KVCache* cache, const torch::Tensor& key_mask) {
  check(input_ids.dim() == 2 && positions.sizes() == input_ids.sizes(),
        "CausalLM::forward_hidden: input_ids and positions must both be [B, T]");
  if (cache) check(cache->n_rows() == input_ids.size(0), "CausalLM::forward_hidden: cache has ", cache->n_rows(),
                   " rows for a batch of ", input_ids.size(0));
  check(positions.numel() > 0, "CausalLM::forward_hidden: empty input");
  check(positions.device() == device(), "positions are on ", positions.device(), " but the model is on ", device());
  const int64_t max_pos = positions.max().item<int64_t>();  // a host sync (rows with shared prefixes add two)
  check(max_pos < rope_.max_positions(), "position ", max_pos, " is beyond max_position_embeddings (",
        config_.max_position_embeddings, "): shorten the prompt or the number of new tokens");
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
  if (fast_cpu_path_applies(cache)) return forward_hidden_cpu_fast(input_ids, positions, cache, key_mask);
  const int64_t B = input_ids.size(0), T = input_ids.size(1);
  AttentionContext ctx;
  std::tie(ctx.cos, ctx.sin) = rope_.lookup(positions, dtype());
  ctx.positions = positions;
  ctx.slots = slots;
  if (cache) {
    ctx.n_keys = max_pos + 1;
    auto key_pos = torch::arange(ctx.n_keys, positions.options()).view({1, 1, ctx.n_keys});
    ctx.blocked = (key_pos > positions.view({B, T, 1})).view({B, 1, 1, T, ctx.n_keys});
  } else {
    ctx.n_keys = T;
    auto blocked = positions.view({B, 1, T}) > positions.view({B, T, 1});  // causal by position
    if (key_mask.defined()) blocked = blocked | key_mask.logical_not().view({B, 1, T});
    ctx.blocked = blocked.view({B, 1, 1, T, T});
  }
  auto h = model->embed_tokens(input_ids);
  const int64_t L = static_cast<int64_t>(model->layers->size());
  for (int64_t l = 0; l < L; ++l) {
    auto layer = model->layers->ptr<DecoderLayerImpl>(l);
    h = layer->forward(h, ctx, cache, l);
  }
  return model->norm(h);
}

torch::Tensor CausalLMImpl::logits(const torch::Tensor& hidden) {
  check(!config_.is_classifier(), "this model is a ", config_.architecture,
        " (a reward model with a score head): it scores sequences and cannot generate or give token log-probs");
  const torch::Tensor& w = lm_head ? lm_head->weight : model->embed_tokens->weight;
  const int64_t rows = hidden.numel() / std::max<int64_t>(1, hidden.size(-1));
  if (hidden.is_cpu() && hidden.scalar_type() == torch::kFloat32 && !torch::GradMode::is_enabled() &&
      fast_cpu_path_applies()) {
    // Decoding: the packed classifier (pack_for_decoding), else for a few
    // rows the matrix-vector kernel, which reads the vocabulary's weights once.
    const float* panels = packed_.find(w);
    if (panels || rows <= cpu::kMatmulWtMaxRows) {
      auto out_sizes = hidden.sizes().vec();
      out_sizes.back() = w.size(0);
      auto out = torch::empty({rows, w.size(0)}, hidden.options());
      matmul_wt_into(hidden.reshape({rows, hidden.size(-1)}), w, torch::Tensor(), out, panels);
      return out.view(out_sizes);
    }
  }
  return torch::nn::functional::linear(hidden, w);
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

torch::Tensor CausalLMImpl::token_logprobs(const torch::Tensor& hidden, const torch::Tensor& targets, int64_t from) {
  return token_logprobs_impl(hidden, targets, nullptr, false, from);
}

std::pair<torch::Tensor, torch::Tensor> CausalLMImpl::token_logprobs_entropy(const torch::Tensor& hidden,
                                                                             const torch::Tensor& targets,
                                                                             bool entropy_grad, int64_t from) {
  torch::Tensor entropy;
  auto lp = token_logprobs_impl(hidden, targets, &entropy, entropy_grad, from);
  return {lp, entropy};
}

torch::Tensor CausalLMImpl::token_logprobs_impl(const torch::Tensor& hidden, const torch::Tensor& targets,
                                                torch::Tensor* entropy, bool entropy_grad, int64_t from) {
  const int64_t T = hidden.size(1);
  check(from >= 0 && from < std::max<int64_t>(T, 1), "token_logprobs: from = ", from, " outside the ", T, " positions");
  const int64_t chunk = std::max<int64_t>(1, 8192 / std::max<int64_t>(1, hidden.size(0)));
  std::vector<torch::Tensor> parts, ent_parts;
  if (from > 0) {  // skipped columns: 0, outside the graph
    parts.push_back(torch::zeros({hidden.size(0), from}, hidden.options().dtype(torch::kFloat32)));
    if (entropy) ent_parts.push_back(parts.back());
  }
  for (int64_t t0 = from; t0 < T; t0 += chunk) {
    const int64_t n = std::min(chunk, T - t0);
    auto lg = logits(hidden.narrow(1, t0, n)).to(torch::kFloat32);  // [B, n, V]
    if (fast_cpu_path_ && lg.device().is_cpu() && !(entropy && entropy_grad)) {
      // One pass per row forward, one backward (the sampler's normaliser); the entropy as a by-product.
      const int64_t B = lg.size(0), V = lg.size(2);
      torch::Tensor ent;
      parts.push_back(fast_token_logprobs(lg.reshape({B * n, V}), targets.narrow(1, t0, n).reshape({B * n}),
                                          entropy ? &ent : nullptr)
                          .view({B, n}));
      if (entropy) ent_parts.push_back(ent.view({B, n}));
      continue;
    }
    auto tgt = targets.narrow(1, t0, n).unsqueeze(-1);
    auto lse = torch::logsumexp(lg, -1);                             // [B, n]
    parts.push_back(lg.gather(-1, tgt).squeeze(-1) - lse);
    if (entropy) {
      // The entropy's implementation (algorithms/entropy.h; the kernel above is tested against it); this
      // loop already chunks.
      if (entropy_grad) {
        ent_parts.push_back(algo::entropy_from_logits(lg, 0));
      } else {
        torch::NoGradGuard ng;
        ent_parts.push_back(algo::entropy_from_logits(lg.detach(), 0));
      }
    }
  }
  if (entropy) *entropy = ent_parts.size() == 1 ? ent_parts[0] : torch::cat(ent_parts, 1);
  return parts.size() == 1 ? parts[0] : torch::cat(parts, 1);
}

torch::Tensor CausalLMImpl::forward(const torch::Tensor& input_ids) {
  auto positions = torch::arange(input_ids.size(1), input_ids.options()).unsqueeze(0).expand_as(input_ids).contiguous();
  return logits(forward_hidden(input_ids, positions));
}

void CausalLMImpl::init_random(uint64_t seed) {
  torch::NoGradGuard no_grad;
  auto gen = at::detail::createCPUGenerator(seed);
  for (auto& p : named_parameters()) {
    const std::string& name = p.key();
    auto& t = p.value();
    torch::Tensor v;
    if (name.find("norm") != std::string::npos) v = torch::ones(t.sizes(), torch::kFloat32);
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

// The fp32 CPU paths of CausalLM::forward_hidden (see transformer.h,
// set_fast_cpu_path). Same weights and the same fp32 arithmetic as the
// module path, far fewer operations: per layer, the projections are matmuls
// on the model's own parameter tensors (rlf's matrix-vector kernel at up to
// 64 rows, LibTorch's above: matmul_wt_into) and everything between them
// (RMSNorms, q/k norms, RoPE, the KV-cache write, attention, the gated
// activation) is one kernel call each (model/cpu_kernels.h). Every family is
// the same loop: the layer's norms, q/k norm, RoPE table, window and
// soft-cap are what its modules say (model/architecture.h). On small models
// the module path spends most of its time in per-operation overhead (~60
// tensor ops per layer forward and as many again backward).
//
//  - inference (no grad): plain buffers, optional KV cache;
//  - training (grad enabled, no cache): the same kernels as autograd
//    functions (RMSNorm, RoPE + attention, gated activation) with
//    hand-written backward passes, between ordinary autograd linears.
//
// Numerics: sums (RMSNorm's mean, dot products) run in another order than
// LibTorch's, so results agree to float rounding; tests/model/
// test_cpu_fast_forward.cpp checks outputs and every parameter gradient
// against the module path, and test_families_oracle.cpp against transformers.
#include <torch/torch.h>

#include <cmath>
#include <optional>

#include "model/cpu_fast_forward.h"
#include "model/cpu_kernels.h"
#include "model/transformer.h"
#include "util/error.h"

namespace rlf {

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

float* fp(const torch::Tensor& t) { return t.data_ptr<float>(); }

}  // namespace

void matmul_wt_into(const torch::Tensor& x, const torch::Tensor& w, const torch::Tensor& bias, torch::Tensor& out,
                    const float* panels) {
  const int64_t N = x.size(0);
  if (w.scalar_type() == torch::kBFloat16) {  // bf16 weights (and bias), fp32 x and out
    const torch::Tensor b32 = bias.defined() ? bias.to(torch::kFloat32).contiguous() : torch::Tensor();
    if (N <= cpu::kMatmulWtMaxRows) {
      const torch::Tensor xc = x.contiguous();
      cpu::matmul_wt_bf16(fp(xc), reinterpret_cast<const uint16_t*>(w.data_ptr<at::BFloat16>()),
                          b32.defined() ? fp(b32) : nullptr, fp(out), N, w.size(1), w.size(0));
    } else {  // prefill: the weight widened once for this product
      matmul_wt_into(x, w.to(torch::kFloat32), b32, out);
    }
  } else if (panels) {
    const torch::Tensor xc = x.contiguous();
    cpu::matmul_panels(fp(xc), panels, bias.defined() ? fp(bias) : nullptr, fp(out), N, w.size(1), w.size(0));
  } else if (N <= cpu::kMatmulWtMaxRows) {
    const torch::Tensor xc = x.contiguous();
    cpu::matmul_wt(fp(xc), fp(w), bias.defined() ? fp(bias) : nullptr, fp(out), N, w.size(1), w.size(0));
  } else if (bias.defined()) {
    at::addmm_out(out, bias, x, w.t());
  } else {
    at::mm_out(out, x, w.t());
  }
}

namespace {

// out = x @ W^T (+ b) for a torch::nn::Linear with its adapter (model/lora.h),
// written into `out` [N, out_features].
void linear_into(const torch::Tensor& x, const torch::nn::Linear& lin, LoraSlot& lora, torch::Tensor& out,
                 const PackedWeights& packed, double* seconds) {
  const StepClock::Span span(seconds);
  const torch::Tensor& w = lora_inference_weight(lin, lora);
  matmul_wt_into(x, w, lin->bias, out, packed.find(w));
  lora_add_into(lora, x, out);
}

// ---- Autograd functions (training path) ------------------------------------

struct RmsNormFn : public torch::autograd::Function<RmsNormFn> {
  // x [N, D], w [D] -> y [N, D]
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& x_in, const torch::Tensor& w, double eps) {
    auto x = x_in.contiguous();
    const int64_t N = x.size(0), D = x.size(1);
    auto y = torch::empty_like(x);
    auto r = torch::empty({N}, x.options());
    cpu::rms_norm_forward(fp(x), fp(w), fp(y), fp(r), N, D, static_cast<float>(eps));
    ctx->save_for_backward({x, w, r});
    return y;
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    auto saved = ctx->get_saved_variables();
    const auto &x = saved[0], &w = saved[1], &r = saved[2];
    auto dy = grads[0].contiguous();
    auto dx = torch::empty_like(x);
    auto dw = torch::zeros_like(w);
    cpu::rms_norm_backward(fp(x), fp(w), fp(r), fp(dy), fp(dx), fp(dw), x.size(0), x.size(1));
    return {dx, dw, torch::Tensor()};
  }
};

// RMSNorm of x [N, D] by `norm` (its scale: weight, or Gemma's 1 + weight, through autograd).
torch::Tensor rms_norm(const torch::Tensor& x, RMSNormImpl& norm) {
  return RmsNormFn::apply(x, norm.scale().contiguous(), norm.eps());
}

struct GluFn : public torch::autograd::Function<GluFn> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& g_in, const torch::Tensor& u_in,
                               int64_t act) {
    auto g = g_in.contiguous(), u = u_in.contiguous();
    auto a = torch::empty_like(g);
    cpu::glu_forward(static_cast<cpu::GluActivation>(act), fp(g), fp(u), fp(a), g.numel());
    ctx->save_for_backward({g, u});
    ctx->saved_data["act"] = act;
    return a;
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    auto saved = ctx->get_saved_variables();
    const auto &g = saved[0], &u = saved[1];
    const auto act = static_cast<cpu::GluActivation>(ctx->saved_data["act"].toInt());
    auto da = grads[0].contiguous();
    auto dg = torch::empty_like(g), du = torch::empty_like(u);
    cpu::glu_backward(act, fp(g), fp(u), fp(da), fp(dg), fp(du), g.numel());
    return {dg, du, torch::Tensor()};
  }
};

// What AttentionFn needs beyond its tensors: the shape and the layer's options.
struct AttentionOptions {
  int64_t B = 0, T = 0, H = 0, K = 0;
  int64_t window = 0;    // sliding window (0 = none)
  double softcap = 0;    // score soft-capping (0 = off)
  double scale = 1;      // scores multiplier
  bool rope = true;      // rotate q and k (false: SmolLM3's NoPE layers)
  bool drop_invalid = false;  // the caller drops the outputs at invalid tokens (cpu::AttentionShape::drop_invalid_queries)
};

cpu::AttentionShape shape_of(const AttentionOptions& o, int64_t hd) {
  cpu::AttentionShape sh{o.B, o.T, o.H, o.K, hd, static_cast<float>(o.scale)};
  sh.window = o.window;
  sh.softcap = static_cast<float>(o.softcap);
  sh.drop_invalid_queries = o.drop_invalid;
  return sh;
}

// RoPE on q and k (when the layer has it), then causal attention over this
// call's tokens. q [N, H*hd], k/v [N, K*hd] (projection outputs, after q/k
// norms) -> out [N, H*hd]. cos/sin tables [positions, rd].
struct AttentionFn : public torch::autograd::Function<AttentionFn> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& q_in, const torch::Tensor& k_in,
                               const torch::Tensor& v_in, const torch::Tensor& pos, const torch::Tensor& valid,
                               const torch::Tensor& cos_table, const torch::Tensor& sin_table, int64_t B, int64_t T,
                               int64_t H, int64_t K, int64_t window, double softcap, double scale, bool rope,
                               bool drop_invalid) {
    const AttentionOptions o{B, T, H, K, window, softcap, scale, rope, drop_invalid};
    const int64_t N = B * T, hd = q_in.size(1) / H, rd = cos_table.size(1);
    auto q = q_in.contiguous().clone(), k = k_in.contiguous().clone(), v = v_in.contiguous();
    const int64_t* pp = pos.data_ptr<int64_t>();
    if (rope) {
      cpu::rope_inplace(fp(q), pp, fp(cos_table), fp(sin_table), N, H, hd, rd, false);
      cpu::rope_inplace(fp(k), pp, fp(cos_table), fp(sin_table), N, K, hd, rd, false);
    }
    const cpu::AttentionShape sh = shape_of(o, hd);
    cpu::KeyLayout kv{fp(k), fp(v), T * K * hd, hd, K * hd};
    auto out = torch::empty({N, H * hd}, q.options());
    auto probs = torch::empty({B, H, T, T}, q.options());
    cpu::attention_forward(fp(q), kv, pp, valid.data_ptr<uint8_t>(), false, sh, fp(out), fp(probs));
    ctx->save_for_backward({q, k, v, probs, pos, cos_table, sin_table, valid});
    ctx->saved_data["B"] = B;
    ctx->saved_data["T"] = T;
    ctx->saved_data["H"] = H;
    ctx->saved_data["K"] = K;
    ctx->saved_data["window"] = window;
    ctx->saved_data["softcap"] = softcap;
    ctx->saved_data["scale"] = scale;
    ctx->saved_data["rope"] = rope;
    ctx->saved_data["drop_invalid"] = drop_invalid;
    return out;
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    auto saved = ctx->get_saved_variables();
    const auto &q = saved[0], &k = saved[1], &v = saved[2], &probs = saved[3], &pos = saved[4];
    const auto &cos_table = saved[5], &sin_table = saved[6], &valid = saved[7];
    auto& d = ctx->saved_data;
    const AttentionOptions o{d["B"].toInt(),    d["T"].toInt(),      d["H"].toInt(),     d["K"].toInt(),
                             d["window"].toInt(), d["softcap"].toDouble(), d["scale"].toDouble(), d["rope"].toBool(),
                             d["drop_invalid"].toBool()};
    const int64_t N = o.B * o.T, hd = q.size(1) / o.H, rd = cos_table.size(1);
    auto dout = grads[0].contiguous();
    auto dq = torch::empty_like(q), dk = torch::empty_like(k), dv = torch::empty_like(v);
    const int64_t* pp = pos.data_ptr<int64_t>();
    cpu::attention_backward(fp(q), fp(k), fp(v), fp(probs), fp(dout), shape_of(o, hd), pp, valid.data_ptr<uint8_t>(),
                            fp(dq), fp(dk), fp(dv));
    if (o.rope) {
      cpu::rope_inplace(fp(dq), pp, fp(cos_table), fp(sin_table), N, o.H, hd, rd, true);
      cpu::rope_inplace(fp(dk), pp, fp(cos_table), fp(sin_table), N, o.K, hd, rd, true);
    }
    variable_list out(16);
    out[0] = dq, out[1] = dk, out[2] = dv;
    return out;
  }
};

// log p(target) per row of logits [N, V]; saves the logits and the row
// normalisers for the backward. Each row's entropy is written into
// entropy_out when it has N elements.
struct TokenLogprobFn : public torch::autograd::Function<TokenLogprobFn> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& logits, const torch::Tensor& targets,
                               const torch::Tensor& entropy_out) {
    const int64_t N = logits.size(0), V = logits.size(1);
    auto lse = torch::empty({N}, logits.options());
    cpu::logsumexp_rows(fp(logits), N, V, fp(lse), entropy_out.numel() == N ? fp(entropy_out) : nullptr);
    auto lp = logits.gather(1, targets.unsqueeze(1)).squeeze(1) - lse;
    ctx->save_for_backward({logits, lse, targets});
    return lp;
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    auto saved = ctx->get_saved_variables();
    const auto &logits = saved[0], &lse = saved[1], &targets = saved[2];
    auto g = grads[0].contiguous();
    auto dx = torch::empty_like(logits);
    cpu::logprob_backward_rows(fp(logits), fp(lse), targets.data_ptr<int64_t>(), fp(g), logits.size(0),
                               logits.size(1), fp(dx));
    return {dx, torch::Tensor(), torch::Tensor()};
  }
};

// The queries', keys' and values' projections of x [N, D] for the training
// path (autograd), after the q/k norms: [N, H*hd], [N, K*hd], [N, K*hd].
std::tuple<torch::Tensor, torch::Tensor, torch::Tensor> train_qkv(AttentionImpl& attn, const torch::Tensor& x) {
  auto [q, k, v] = attn.project_qkv(x);
  const int64_t N = x.size(0), H = attn.n_heads, K = attn.n_kv_heads, hd = attn.head_dim;
  if (attn.qk_norm == QkNorm::PerHead) {
    q = rms_norm(q.reshape({N * H, hd}), *attn.q_norm).view({N, H * hd});
    k = rms_norm(k.reshape({N * K, hd}), *attn.k_norm).view({N, K * hd});
  } else if (attn.qk_norm == QkNorm::Whole) {
    q = rms_norm(q, *attn.q_norm);
    k = rms_norm(k, *attn.k_norm);
  }
  return {q, k, v};
}

// The scale an RMSNorm multiplies by, as a plain fp32 buffer (inference path;
// widened from bf16 weights).
torch::Tensor norm_scale(RMSNormImpl& norm) { return norm.scale().to(torch::kFloat32).contiguous(); }

// In-place RMSNorm of rows [N, D] of `x` (inference path).
void rms_inplace(const torch::Tensor& x, RMSNormImpl& norm, int64_t N, int64_t D) {
  const torch::Tensor w = norm_scale(norm);
  cpu::rms_norm_forward(fp(x), fp(w), fp(x), nullptr, N, D, static_cast<float>(norm.eps()));
}

// The inference path's buffers, allocated once per forward.
struct Buffers {
  torch::Tensor h, xn, tmp, q, k, v, att, qkv, gate, up, gate_up;
};

}  // namespace

bool CausalLMImpl::parameters_are(torch::ScalarType t) const {
  for (const auto& p : parameters())
    if (!p.is_contiguous() || p.scalar_type() != t) return false;
  return true;
}

torch::ScalarType CausalLMImpl::kv_cache_dtype() const {
  const bool bf16_decoding = fast_cpu_path_ && device().is_cpu() && dtype() == torch::kBFloat16 &&
                             !config_.is_classifier() && parameters_are(torch::kBFloat16);
  return bf16_decoding ? torch::kFloat32 : dtype();
}

bool CausalLMImpl::fast_cpu_path_applies(KVCache* cache) const {
  if (!fast_cpu_path_ || !device().is_cpu()) return false;
  if (dtype() == torch::kBFloat16) {  // decoding only, into an fp32 cache (kv_cache_dtype)
    if (!cache || kv_cache_dtype() != torch::kFloat32) return false;
  } else if (dtype() != torch::kFloat32 || !parameters_are(torch::kFloat32)) {
    return false;
  }
  if (cache && (!cache->reserved() || cache->keys(0).scalar_type() != torch::kFloat32 || cache->keys(0).stride(3) != 1))
    return false;
  if (cache && torch::GradMode::is_enabled()) return false;  // cached decoding is inference only
  return true;
}

void CausalLMImpl::pack_for_decoding() {
  packed_.clear();
  torch::NoGradGuard no_grad;
  if (!pack_weights_ || !fast_cpu_path_applies() || !cpu::vector_kernels()) return;
  for (int64_t l = 0; l < config_.num_hidden_layers; ++l)
    for (const Projection& p : layer(l).projections()) packed_.pack(lora_inference_weight(*p.linear, *p.lora));
  if (!config_.is_classifier()) packed_.pack(lm_head ? lm_head->weight : model->embed_tokens->weight);
}

torch::Tensor CausalLMImpl::forward_hidden_cpu_fast(const torch::Tensor& input_ids, const torch::Tensor& positions,
                                                    KVCache* cache, const torch::Tensor& key_mask, int64_t max_pos,
                                                    const torch::Tensor& tokens) {
  const ModelConfig& c = config_;
  const bool packed = tokens.defined();  // padding-free: N tokens of the [B, T] grid, attention on the grid
  const int64_t B = input_ids.size(0), T = input_ids.size(1), N = packed ? tokens.size(0) : B * T;
  const int64_t D = c.hidden_size, H = c.num_attention_heads, K = c.num_key_value_heads;
  const int64_t hd = c.resolved_head_dim(), V = c.vocab_size, I = c.intermediate_size;
  const bool train = torch::GradMode::is_enabled();
  // A decoding step's parts, when a clock is attached (model/step_clock.h).
  StepClock* clock = cache && T == 1 && !train ? step_clock_ : nullptr;
  if (clock) ++clock->steps;
  const StepClock::Span whole(clock ? &clock->forward_s : nullptr);
  double* const projections_s = clock ? &clock->projections_s : nullptr;
  double* const attention_s = clock ? &clock->attention_s : nullptr;

  const torch::Tensor grid_ids = input_ids.to(torch::kInt64).contiguous().view({B * T});
  const torch::Tensor ids = packed ? grid_ids.index_select(0, tokens) : grid_ids;
  const torch::Tensor pos = positions.to(torch::kInt64).contiguous();  // the grid's, for attention
  const torch::Tensor tok_pos = packed ? pos.view({B * T}).index_select(0, tokens) : pos;  // each token's, for RoPE
  const int64_t* pp = pos.data_ptr<int64_t>();
  const int64_t* tpp = tok_pos.data_ptr<int64_t>();
  torch::Tensor valid;  // [B, T] uint8 (no cache only)
  if (!cache && key_mask.defined()) valid = key_mask.to(torch::kUInt8).contiguous();
  const uint8_t* vp = valid.defined() ? valid.data_ptr<uint8_t>() : nullptr;
  {
    const int64_t* idp = ids.data_ptr<int64_t>();
    for (int64_t n = 0; n < N; ++n)
      check(idp[n] >= 0 && idp[n] < V, "token id ", idp[n], " is outside the vocabulary (", V, ")");
  }
  std::vector<RotaryEmbedding::Tables> rope;  // per RoPE table, for this call's positions
  for (const RotaryEmbedding& r : ropes_) rope.push_back(r.tables(max_pos));
  const int64_t rd = c.rotary_dim();
  const int64_t L = c.num_hidden_layers;

  if (train) {
    // (autograd functions take defined tensors only: no mask = all valid)
    if (!valid.defined()) valid = torch::ones({B, T}, torch::kUInt8);
    // Autograd graph: embedding, per layer the projections + the fused functions + 2 adds.
    // (captures by value: a checkpointed segment runs again in backward)
    auto layer_fn = [this, pos, valid, rope, B, T, H, K, tokens, packed](int64_t l, const torch::Tensor& x) {
      DecoderLayerImpl& layer = this->layer(l);
      AttentionImpl& attn = *layer.self_attn;
      torch::Tensor h = x;
      auto xa = layer.attn_in ? rms_norm(h, *layer.attn_in) : h;
      auto [q, k, v] = train_qkv(attn, xa);
      if (packed) {  // on the grid, one sequence per row, RoPE at the grid's positions
        q = tokens_to_grid(q, tokens, B * T);
        k = tokens_to_grid(k, tokens, B * T);
        v = tokens_to_grid(v, tokens, B * T);
      }
      const auto& tab = rope[static_cast<size_t>(std::max(attn.spec.rope, 0))];
      auto a = AttentionFn::apply(q, k, v, pos, valid, tab.cos, tab.sin, B, T, H, K, attn.spec.window, attn.softcap,
                                  attn.scale, attn.spec.rope >= 0, /*drop_invalid=*/packed);
      if (packed) a = a.index_select(0, tokens);
      auto o = lora_project(attn.o_proj, attn.o_lora, a);
      h = h + (layer.attn_out ? rms_norm(o, *layer.attn_out) : o);
      MLPImpl& mlp = *layer.mlp;
      auto xm = layer.mlp_in ? rms_norm(h, *layer.mlp_in) : h;
      auto [g, u] = mlp.project_gate_up(xm);
      auto m = lora_project(mlp.down_proj, mlp.down_lora, GluFn::apply(g, u, static_cast<int64_t>(mlp.act)));
      return h + (layer.mlp_out ? rms_norm(m, *layer.mlp_out) : m);
    };
    const auto h = run_layers(embed(ids), T, B * T, true, layer_fn);  // [N, D]
    return packed ? rms_norm(h, *model->norm).view({1, N, D}) : rms_norm(h, *model->norm).view({B, T, D});
  }

  const Family& fam = c.family();
  auto f32 = torch::TensorOptions().dtype(torch::kFloat32);
  Buffers buf;
  buf.xn = torch::empty({N, D}, f32), buf.tmp = torch::empty({N, D}, f32);
  buf.q = torch::empty({N, H * hd}, f32), buf.k = torch::empty({N, K * hd}, f32);
  buf.v = torch::empty({N, K * hd}, f32), buf.att = torch::empty({N, H * hd}, f32);
  buf.gate = torch::empty({N, I}, f32), buf.up = torch::empty({N, I}, f32);
  if (fam.fused_qkv) buf.qkv = torch::empty({N, (H + 2 * K) * hd}, f32);
  if (fam.fused_gate_up) buf.gate_up = torch::empty({N, 2 * I}, f32);
  // Padding-free: attention's queries, keys, values and output on the grid
  // (zeros at padding, which no query sees and whose outputs are dropped).
  torch::Tensor grid_q, grid_k, grid_v, grid_att;
  if (packed) {
    grid_q = torch::zeros({B * T, H * hd}, f32), grid_att = torch::zeros({B * T, H * hd}, f32);
    grid_k = torch::zeros({B * T, K * hd}, f32), grid_v = torch::zeros({B * T, K * hd}, f32);
  }
  buf.h = embed(ids, torch::kFloat32).contiguous();  // [N, D] (bf16 weights: widened, then Gemma's scale)
  torch::Tensor &h = buf.h, &xn = buf.xn, &tmp = buf.tmp, &q = buf.q, &k = buf.k, &v = buf.v;
  // Rows' shared prefixes (len 0 = none); forward_hidden checked every
  // position fed is past its row's prefix and within the row's own slots.
  std::vector<cpu::SharedPrefix> prefixes(static_cast<size_t>(B));
  bool shared = false;
  for (int64_t b = 0; cache && b < B; ++b) shared |= cache->prefix(b) != nullptr;

  for (int64_t l = 0; l < L; ++l) {
    DecoderLayerImpl& layer = this->layer(l);
    AttentionImpl& attn = *layer.self_attn;
    const torch::Tensor* xa = &h;
    if (layer.attn_in) {
      const torch::Tensor w = norm_scale(*layer.attn_in);
      cpu::rms_norm_forward(fp(h), fp(w), fp(xn), nullptr, N, D, static_cast<float>(layer.attn_in->eps()));
      xa = &xn;
    }
    if (attn.qkv_proj.is_empty()) {
      linear_into(*xa, attn.q_proj, attn.q_lora, q, packed_, projections_s);
      linear_into(*xa, attn.k_proj, attn.k_lora, k, packed_, projections_s);
      linear_into(*xa, attn.v_proj, attn.v_lora, v, packed_, projections_s);
    } else {  // Phi-3: one product, then the three blocks of columns
      linear_into(*xa, attn.qkv_proj, attn.qkv_lora, buf.qkv, packed_, projections_s);
      q.copy_(buf.qkv.narrow(1, 0, H * hd));
      k.copy_(buf.qkv.narrow(1, H * hd, K * hd));
      v.copy_(buf.qkv.narrow(1, (H + K) * hd, K * hd));
    }
    if (attn.qk_norm == QkNorm::PerHead) {
      rms_inplace(q, *attn.q_norm, N * H, hd);
      rms_inplace(k, *attn.k_norm, N * K, hd);
    } else if (attn.qk_norm == QkNorm::Whole) {
      rms_inplace(q, *attn.q_norm, N, H * hd);
      rms_inplace(k, *attn.k_norm, N, K * hd);
    }
    if (attn.spec.rope >= 0) {
      const auto& tab = rope[static_cast<size_t>(attn.spec.rope)];
      cpu::rope_inplace(fp(q), tpp, fp(tab.cos), fp(tab.sin), N, H, hd, rd, false);
      cpu::rope_inplace(fp(k), tpp, fp(tab.cos), fp(tab.sin), N, K, hd, rd, false);
    }

    // Keys/values: with a cache, written at the tokens' own slots and read
    // back from [0, position] (a row's shared prefix first, then its own
    // slots from position - prefix length); without one, this call's tokens.
    std::optional<StepClock::Span> attending(attention_s);
    cpu::KeyLayout kv{fp(k), fp(v), T * K * hd, hd, K * hd};
    if (cache) {
      torch::Tensor& ck = cache->keys(l);
      torch::Tensor& cv = cache->values(l);
      kv = {fp(ck), fp(cv), ck.stride(0), ck.stride(1), ck.stride(2)};
      check(cv.stride(0) == kv.s0 && cv.stride(1) == kv.s1 && cv.stride(2) == kv.s2,
            "KV cache keys/values layouts differ");
      if (shared) {
        for (int64_t b = 0; b < B; ++b) {
          const KVCache* p = cache->prefix(b);
          if (!p) continue;
          const torch::Tensor& pk = p->keys(l);
          const torch::Tensor& pv = p->values(l);
          check(pv.strides() == pk.strides() && pk.stride(3) == 1, "shared prefix keys/values layouts differ");
          prefixes[b] = {pk.data_ptr<float>(), pv.data_ptr<float>(), p->max_len(), pk.stride(1), pk.stride(2)};
        }
        kv.prefix = prefixes.data();
      }
      float* ckp = fp(ck);
      float* cvp = fp(cv);
      const float* kp = fp(k);
      const float* vvp = fp(v);
      cpu::parallel_rows(N, [&](int64_t n0, int64_t n1) {
        for (int64_t n = n0; n < n1; ++n) {
          const int64_t b = n / T;
          for (int64_t kh = 0; kh < K; ++kh) {
            const int64_t off = b * kv.s0 + kh * kv.s1 + (pp[n] - prefixes[b].len) * kv.s2;
            std::copy(kp + (n * K + kh) * hd, kp + (n * K + kh + 1) * hd, ckp + off);
            std::copy(vvp + (n * K + kh) * hd, vvp + (n * K + kh + 1) * hd, cvp + off);
          }
        }
      });
    }
    cpu::AttentionShape sh{B, T, H, K, hd, static_cast<float>(attn.scale)};
    sh.window = attn.spec.window;
    sh.softcap = static_cast<float>(attn.softcap);
    if (packed) {
      grid_q.index_copy_(0, tokens, q), grid_k.index_copy_(0, tokens, k), grid_v.index_copy_(0, tokens, v);
      const cpu::KeyLayout grid_kv{fp(grid_k), fp(grid_v), T * K * hd, hd, K * hd};
      sh.drop_invalid_queries = vp != nullptr;  // only the real tokens' outputs are read back
      cpu::attention_forward(fp(grid_q), grid_kv, pp, vp, false, sh, fp(grid_att), nullptr);
      torch::index_select_out(buf.att, grid_att, 0, tokens);
    } else {
      cpu::attention_forward(fp(q), kv, pp, vp, cache != nullptr, sh, fp(buf.att), nullptr);
    }
    attending.reset();
    linear_into(buf.att, attn.o_proj, attn.o_lora, tmp, packed_, projections_s);
    if (layer.attn_out) rms_inplace(tmp, *layer.attn_out, N, D);
    cpu::add_inplace(fp(h), fp(tmp), N * D);

    MLPImpl& mlp = *layer.mlp;
    const torch::Tensor* xm = &h;
    if (layer.mlp_in) {
      const torch::Tensor w = norm_scale(*layer.mlp_in);
      cpu::rms_norm_forward(fp(h), fp(w), fp(xn), nullptr, N, D, static_cast<float>(layer.mlp_in->eps()));
      xm = &xn;
    }
    if (mlp.gate_up_proj.is_empty()) {
      linear_into(*xm, mlp.gate_proj, mlp.gate_lora, buf.gate, packed_, projections_s);
      linear_into(*xm, mlp.up_proj, mlp.up_lora, buf.up, packed_, projections_s);
    } else {  // Phi-3: one product, then the gate and up halves
      linear_into(*xm, mlp.gate_up_proj, mlp.gate_up_lora, buf.gate_up, packed_, projections_s);
      buf.gate.copy_(buf.gate_up.narrow(1, 0, I));
      buf.up.copy_(buf.gate_up.narrow(1, I, I));
    }
    cpu::glu_forward(mlp.act, fp(buf.gate), fp(buf.up), fp(buf.gate), N * I);
    linear_into(buf.gate, mlp.down_proj, mlp.down_lora, tmp, packed_, projections_s);
    if (layer.mlp_out) rms_inplace(tmp, *layer.mlp_out, N, D);
    cpu::add_inplace(fp(h), fp(tmp), N * D);
  }
  const torch::Tensor w = norm_scale(*model->norm);
  cpu::rms_norm_forward(fp(h), fp(w), fp(xn), nullptr, N, D, static_cast<float>(model->norm->eps()));
  return packed ? xn.view({1, N, D}) : xn.view({B, T, D});
}

torch::Tensor fast_token_logprobs(const torch::Tensor& logits, const torch::Tensor& targets, torch::Tensor* entropy) {
  check(logits.dim() == 2 && logits.device().is_cpu() && logits.scalar_type() == torch::kFloat32,
        "fast_token_logprobs: logits must be fp32 [N, V] on the CPU, got ", logits.scalar_type(), " ", logits.sizes());
  const int64_t N = logits.size(0), V = logits.size(1);
  check(targets.dim() == 1 && targets.size(0) == N, "fast_token_logprobs: targets must be [", N, "], got ",
        targets.sizes());
  const torch::Tensor t = targets.to(torch::kInt64).contiguous();
  {
    const int64_t* tp = t.data_ptr<int64_t>();
    for (int64_t n = 0; n < N; ++n)
      check(tp[n] >= 0 && tp[n] < V, "target id ", tp[n], " is outside the vocabulary (", V, ")");
  }
  // (autograd functions take defined tensors only: an empty one = no entropy)
  torch::Tensor ent = torch::empty({entropy ? N : 0}, logits.options());
  auto lp = TokenLogprobFn::apply(logits.contiguous(), t, ent);
  if (entropy) *entropy = ent;
  return lp;
}

}  // namespace rlf

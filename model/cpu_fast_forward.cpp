// The fp32 CPU paths of CausalLM::forward_hidden (see transformer.h,
// set_fast_cpu_path). Same weights and the same fp32 arithmetic as the
// module path, far fewer operations: per layer, the 7 projections are
// matmuls on the model's own parameter tensors (rlf's matrix-vector kernel
// at up to 64 rows, LibTorch's above: matmul_wt_into) and everything
// between them (RMSNorm, RoPE, the KV-cache write, attention, SwiGLU) is one
// kernel call each (model/cpu_kernels.h). On small models the module path
// spends most of its time in per-operation overhead (~60 tensor ops per layer
// forward and as many again backward).
//
//  - inference (no grad): plain buffers, optional KV cache;
//  - training (grad enabled, no cache): the same kernels as three autograd
//    functions (RMSNorm, RoPE + attention, SwiGLU) with hand-written
//    backward passes, between ordinary autograd linears.
//
// Numerics: sums (RMSNorm's mean, dot products) run in another order than
// LibTorch's, so results agree to float rounding; tests/model/
// test_cpu_fast_forward.cpp checks outputs and every parameter gradient
// against the module path, and test_transformer_oracle.cpp against transformers.
#include <torch/torch.h>

#include <cmath>

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
  if (panels) {
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
                 const PackedWeights& packed) {
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

struct SwiGluFn : public torch::autograd::Function<SwiGluFn> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& g_in, const torch::Tensor& u_in) {
    auto g = g_in.contiguous(), u = u_in.contiguous();
    auto a = torch::empty_like(g);
    cpu::swiglu_forward(fp(g), fp(u), fp(a), g.numel());
    ctx->save_for_backward({g, u});
    return a;
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    auto saved = ctx->get_saved_variables();
    const auto &g = saved[0], &u = saved[1];
    auto da = grads[0].contiguous();
    auto dg = torch::empty_like(g), du = torch::empty_like(u);
    cpu::swiglu_backward(fp(g), fp(u), fp(da), fp(dg), fp(du), g.numel());
    return {dg, du};
  }
};

// RoPE on q and k, then causal attention over this call's tokens.
// q [N, H*hd], k/v [N, K*hd] (projection outputs) -> out [N, H*hd].
struct AttentionFn : public torch::autograd::Function<AttentionFn> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& q_in, const torch::Tensor& k_in,
                               const torch::Tensor& v_in, const torch::Tensor& pos, const torch::Tensor& valid,
                               const torch::Tensor& cos_table, const torch::Tensor& sin_table, int64_t B, int64_t T,
                               int64_t H, int64_t K) {
    const int64_t N = B * T, hd = q_in.size(1) / H;
    auto q = q_in.contiguous().clone(), k = k_in.contiguous().clone(), v = v_in.contiguous();
    const int64_t* pp = pos.data_ptr<int64_t>();
    cpu::rope_inplace(fp(q), pp, fp(cos_table), fp(sin_table), N, H, hd, false);
    cpu::rope_inplace(fp(k), pp, fp(cos_table), fp(sin_table), N, K, hd, false);
    cpu::AttentionShape sh{B, T, H, K, hd, static_cast<float>(1.0 / std::sqrt(static_cast<double>(hd)))};
    cpu::KeyLayout kv{fp(k), fp(v), T * K * hd, hd, K * hd};
    auto out = torch::empty({N, H * hd}, q.options());
    auto probs = torch::empty({B, H, T, T}, q.options());
    cpu::attention_forward(fp(q), kv, pp, valid.data_ptr<uint8_t>(), false, sh, fp(out), fp(probs));
    ctx->save_for_backward({q, k, v, probs, pos, cos_table, sin_table});
    ctx->saved_data["B"] = B;
    ctx->saved_data["T"] = T;
    ctx->saved_data["H"] = H;
    ctx->saved_data["K"] = K;
    return out;
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    auto saved = ctx->get_saved_variables();
    const auto &q = saved[0], &k = saved[1], &v = saved[2], &probs = saved[3], &pos = saved[4];
    const auto &cos_table = saved[5], &sin_table = saved[6];
    const int64_t B = ctx->saved_data["B"].toInt(), T = ctx->saved_data["T"].toInt();
    const int64_t H = ctx->saved_data["H"].toInt(), K = ctx->saved_data["K"].toInt();
    const int64_t N = B * T, hd = q.size(1) / H;
    auto dout = grads[0].contiguous();
    auto dq = torch::empty_like(q), dk = torch::empty_like(k), dv = torch::empty_like(v);
    cpu::AttentionShape sh{B, T, H, K, hd, static_cast<float>(1.0 / std::sqrt(static_cast<double>(hd)))};
    const int64_t* pp = pos.data_ptr<int64_t>();
    cpu::attention_backward(fp(q), fp(k), fp(v), fp(probs), fp(dout), sh, pp, fp(dq), fp(dk), fp(dv));
    cpu::rope_inplace(fp(dq), pp, fp(cos_table), fp(sin_table), N, H, hd, true);
    cpu::rope_inplace(fp(dk), pp, fp(cos_table), fp(sin_table), N, K, hd, true);
    return {dq, dk, dv, torch::Tensor(), torch::Tensor(), torch::Tensor(), torch::Tensor(),
            torch::Tensor(), torch::Tensor(), torch::Tensor(), torch::Tensor()};
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

}  // namespace

bool CausalLMImpl::fast_cpu_path_applies(KVCache* cache) const {
  if (!fast_cpu_path_) return false;
  if (!device().is_cpu() || dtype() != torch::kFloat32) return false;
  if (cache && (!cache->reserved() || cache->keys(0).scalar_type() != torch::kFloat32 || cache->keys(0).stride(3) != 1))
    return false;
  if (cache && torch::GradMode::is_enabled()) return false;  // cached decoding is inference only
  for (const auto& p : parameters())
    if (!p.is_contiguous() || p.scalar_type() != torch::kFloat32) return false;
  return true;
}

void CausalLMImpl::pack_for_decoding() {
  packed_.clear();
  torch::NoGradGuard no_grad;
  if (!pack_weights_ || !fast_cpu_path_applies() || !cpu::vector_kernels()) return;
  const int64_t L = static_cast<int64_t>(model->layers->size());
  for (int64_t l = 0; l < L; ++l) {
    auto& layer = *model->layers->ptr<DecoderLayerImpl>(l);
    auto& attn = *layer.self_attn;
    auto& mlp = *layer.mlp;
    packed_.pack(lora_inference_weight(attn.q_proj, attn.q_lora));
    packed_.pack(lora_inference_weight(attn.k_proj, attn.k_lora));
    packed_.pack(lora_inference_weight(attn.v_proj, attn.v_lora));
    packed_.pack(lora_inference_weight(attn.o_proj, attn.o_lora));
    packed_.pack(lora_inference_weight(mlp.gate_proj, mlp.gate_lora));
    packed_.pack(lora_inference_weight(mlp.up_proj, mlp.up_lora));
    packed_.pack(lora_inference_weight(mlp.down_proj, mlp.down_lora));
  }
  if (!config_.is_classifier()) packed_.pack(lm_head ? lm_head->weight : model->embed_tokens->weight);
}

torch::Tensor CausalLMImpl::forward_hidden_cpu_fast(const torch::Tensor& input_ids, const torch::Tensor& positions,
                                                    KVCache* cache, const torch::Tensor& key_mask) {
  const ModelConfig& c = config_;
  const int64_t B = input_ids.size(0), T = input_ids.size(1), N = B * T;
  const int64_t D = c.hidden_size, H = c.num_attention_heads, K = c.num_key_value_heads;
  const int64_t hd = c.resolved_head_dim(), V = c.vocab_size;
  const float eps = static_cast<float>(c.rms_norm_eps);
  const bool train = torch::GradMode::is_enabled();

  const torch::Tensor ids = input_ids.to(torch::kInt64).contiguous().view({N});
  const torch::Tensor pos = positions.to(torch::kInt64).contiguous();
  const int64_t* pp = pos.data_ptr<int64_t>();
  torch::Tensor valid;  // [B, T] uint8 (no cache only)
  if (!cache && key_mask.defined()) valid = key_mask.to(torch::kUInt8).contiguous();
  const uint8_t* vp = valid.defined() ? valid.data_ptr<uint8_t>() : nullptr;
  {
    const int64_t* idp = ids.data_ptr<int64_t>();
    for (int64_t n = 0; n < N; ++n)
      check(idp[n] >= 0 && idp[n] < V, "token id ", idp[n], " is outside the vocabulary (", V, ")");
  }
  const torch::Tensor& cos_t = rope_.cos_table();
  const torch::Tensor& sin_t = rope_.sin_table();
  const int64_t L = static_cast<int64_t>(model->layers->size());

  if (train) {
    // (autograd functions take defined tensors only: no mask = all valid)
    if (!valid.defined()) valid = torch::ones({B, T}, torch::kUInt8);
    // Autograd graph: embedding, per layer 7 linears + 3 fused functions + 2 adds.
    auto h = torch::embedding(model->embed_tokens->weight, ids);  // [N, D]
    for (int64_t l = 0; l < L; ++l) {
      auto& layer = *model->layers->ptr<DecoderLayerImpl>(l);
      auto& attn = *layer.self_attn;
      auto xn = RmsNormFn::apply(h, layer.input_layernorm->weight, c.rms_norm_eps);
      auto a = AttentionFn::apply(lora_project(attn.q_proj, attn.q_lora, xn), lora_project(attn.k_proj, attn.k_lora, xn),
                                  lora_project(attn.v_proj, attn.v_lora, xn), pos, valid, cos_t, sin_t, B, T,
                                  H, K);
      h = h + lora_project(attn.o_proj, attn.o_lora, a);
      auto& mlp = *layer.mlp;
      auto xm = RmsNormFn::apply(h, layer.post_attention_layernorm->weight, c.rms_norm_eps);
      h = h + lora_project(mlp.down_proj, mlp.down_lora,
                           SwiGluFn::apply(lora_project(mlp.gate_proj, mlp.gate_lora, xm),
                                           lora_project(mlp.up_proj, mlp.up_lora, xm)));
    }
    return RmsNormFn::apply(h, model->norm->weight, c.rms_norm_eps).view({B, T, D});
  }

  const int64_t I = c.intermediate_size;
  auto f32 = torch::TensorOptions().dtype(torch::kFloat32);
  torch::Tensor h = torch::empty({N, D}, f32), xn = torch::empty({N, D}, f32), tmp = torch::empty({N, D}, f32);
  torch::Tensor q = torch::empty({N, H * hd}, f32), k = torch::empty({N, K * hd}, f32);
  torch::Tensor v = torch::empty({N, K * hd}, f32), att = torch::empty({N, H * hd}, f32);
  torch::Tensor gate = torch::empty({N, I}, f32), up = torch::empty({N, I}, f32);
  at::index_select_out(h, model->embed_tokens->weight, 0, ids);
  cpu::AttentionShape sh{B, T, H, K, hd, static_cast<float>(1.0 / std::sqrt(static_cast<double>(hd)))};
  // Rows' shared prefixes (len 0 = none); forward_hidden checked every
  // position fed is past its row's prefix and within the row's own slots.
  std::vector<cpu::SharedPrefix> prefixes(static_cast<size_t>(B));
  bool shared = false;
  for (int64_t b = 0; cache && b < B; ++b) shared |= cache->prefix(b) != nullptr;

  for (int64_t l = 0; l < L; ++l) {
    auto& layer = *model->layers->ptr<DecoderLayerImpl>(l);
    auto& attn = *layer.self_attn;
    cpu::rms_norm_forward(fp(h), fp(layer.input_layernorm->weight), fp(xn), nullptr, N, D, eps);
    linear_into(xn, attn.q_proj, attn.q_lora, q, packed_);
    linear_into(xn, attn.k_proj, attn.k_lora, k, packed_);
    linear_into(xn, attn.v_proj, attn.v_lora, v, packed_);
    cpu::rope_inplace(fp(q), pp, fp(cos_t), fp(sin_t), N, H, hd, false);
    cpu::rope_inplace(fp(k), pp, fp(cos_t), fp(sin_t), N, K, hd, false);

    // Keys/values: with a cache, written at the tokens' own slots and read
    // back from [0, position] (a row's shared prefix first, then its own
    // slots from position - prefix length); without one, this call's tokens.
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
      for (int64_t n = 0; n < N; ++n) {
        const int64_t b = n / T;
        for (int64_t kh = 0; kh < K; ++kh) {
          const int64_t off = b * kv.s0 + kh * kv.s1 + (pp[n] - prefixes[b].len) * kv.s2;
          std::copy(kp + (n * K + kh) * hd, kp + (n * K + kh + 1) * hd, ckp + off);
          std::copy(vvp + (n * K + kh) * hd, vvp + (n * K + kh + 1) * hd, cvp + off);
        }
      }
    }
    cpu::attention_forward(fp(q), kv, pp, vp, cache != nullptr, sh, fp(att), nullptr);
    linear_into(att, attn.o_proj, attn.o_lora, tmp, packed_);
    h.add_(tmp);

    auto& mlp = *layer.mlp;
    cpu::rms_norm_forward(fp(h), fp(layer.post_attention_layernorm->weight), fp(xn), nullptr, N, D, eps);
    linear_into(xn, mlp.gate_proj, mlp.gate_lora, gate, packed_);
    linear_into(xn, mlp.up_proj, mlp.up_lora, up, packed_);
    cpu::swiglu_forward(fp(gate), fp(up), fp(gate), N * I);
    linear_into(gate, mlp.down_proj, mlp.down_lora, tmp, packed_);
    h.add_(tmp);
  }
  cpu::rms_norm_forward(fp(h), fp(model->norm->weight), fp(xn), nullptr, N, D, eps);
  return xn.view({B, T, D});
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

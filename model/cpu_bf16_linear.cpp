#include "model/cpu_bf16_linear.h"

#include "model/cpu_features.h"
#include "model/cpu_kernels.h"

namespace rlf {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// y [N, O] in bf16 from x2 [N, I] fp32 (contiguous), w [O, I] bf16, bias [O] bf16 or undefined.
torch::Tensor bf16_linear_product(const torch::Tensor& x2, const torch::Tensor& w, const torch::Tensor& bias) {
  const int64_t N = x2.size(0), I = x2.size(1), O = w.size(0);
  const torch::Tensor b32 = bias.defined() ? bias.to(torch::kFloat32).contiguous() : torch::Tensor();
  torch::Tensor y32;
  if (N <= cpu::kMatmulWtMaxRows) {
    const torch::Tensor wc = w.contiguous();
    y32 = torch::empty({N, O}, x2.options());
    cpu::matmul_wt_bf16(x2.data_ptr<float>(), reinterpret_cast<const uint16_t*>(wc.data_ptr<at::BFloat16>()),
                        b32.defined() ? b32.data_ptr<float>() : nullptr, y32.data_ptr<float>(), N, I, O);
  } else {
    const torch::Tensor w32 = w.to(torch::kFloat32);
    y32 = b32.defined() ? torch::addmm(b32, x2, w32.t()) : torch::mm(x2, w32.t());
  }
  return y32.to(torch::kBFloat16);
}

torch::Tensor bf16_rows_fp32(const torch::Tensor& x) {
  return x.reshape({-1, x.size(-1)}).to(torch::kFloat32).contiguous();
}

torch::Tensor bf16_linear_values(const torch::Tensor& x, const torch::Tensor& w, const torch::Tensor& bias) {
  auto sizes = x.sizes().vec();
  sizes.back() = w.size(0);
  return bf16_linear_product(bf16_rows_fp32(x), w, bias).view(sizes);
}

struct Bf16LinearFn : public torch::autograd::Function<Bf16LinearFn> {
  // LibTorch 1.13's apply() needs every tensor argument defined: without a
  // bias, `bias` is an empty placeholder and has_bias false.
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& x, const torch::Tensor& w,
                               const torch::Tensor& bias, bool has_bias) {
    ctx->save_for_backward({x, w});
    ctx->saved_data["has_bias"] = has_bias;
    return bf16_linear_values(x, w, has_bias ? bias : torch::Tensor());
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const variable_list saved = ctx->get_saved_variables();
    const torch::Tensor x = saved[0], w = saved[1];
    const int64_t O = w.size(0);
    const torch::Tensor g32 = grads[0].reshape({-1, O}).to(torch::kFloat32);  // once for all three
    torch::Tensor dx, dw, db;
    if (ctx->needs_input_grad(0)) dx = g32.mm(w.to(torch::kFloat32)).to(torch::kBFloat16).view(x.sizes());
    if (ctx->needs_input_grad(1)) dw = g32.t().mm(bf16_rows_fp32(x)).to(torch::kBFloat16);
    if (ctx->saved_data["has_bias"].toBool() && ctx->needs_input_grad(2)) db = g32.sum(0).to(torch::kBFloat16);
    return {dx, dw, db, torch::Tensor()};
  }
};

}  // namespace

bool cpu_bf16_linear_applies(const torch::Tensor& x, const torch::Tensor& w, const torch::Tensor& bias) {
  if (!x.defined() || !w.defined() || !x.is_cpu() || !w.is_cpu()) return false;
  if (x.scalar_type() != torch::kBFloat16 || w.scalar_type() != torch::kBFloat16 || w.dim() != 2 || x.dim() < 1)
    return false;
  if (bias.defined() && (bias.scalar_type() != torch::kBFloat16 || !bias.is_cpu())) return false;
  if (x.size(-1) != w.size(1)) return false;  // LibTorch names the mismatch
  const int64_t rows = x.size(-1) > 0 ? x.numel() / x.size(-1) : 0;
  return rows <= cpu::kMatmulWtMaxRows || !cpu_bf16_matmul_fast();
}

torch::Tensor linear_layer_input_grad(const torch::Tensor& g, const torch::Tensor& w) {
  if (!cpu_bf16_linear_applies(g, w.t())) return g.matmul(w);
  return g.to(torch::kFloat32).matmul(w.to(torch::kFloat32)).to(torch::kBFloat16);
}

torch::Tensor matmul_layer(const torch::Tensor& a, const torch::Tensor& b) {
  const auto bf16_cpu = [](const torch::Tensor& t) { return t.is_cpu() && t.scalar_type() == torch::kBFloat16; };
  // Decoding's few query rows stay on LibTorch: there the casts cost more than its slow product
  // (stories110M, one stream: 44 against 27 ms per token on the Zen 3).
  const bool few_rows = a.dim() < 2 || a.size(-2) <= cpu::kMatmulWtMaxRows;
  if (!bf16_cpu(a) || !bf16_cpu(b) || cpu_bf16_matmul_fast() || few_rows) return torch::matmul(a, b);
  return torch::matmul(a.to(torch::kFloat32), b.to(torch::kFloat32)).to(torch::kBFloat16);
}

torch::Tensor linear_layer(const torch::Tensor& x, const torch::Tensor& w, const torch::Tensor& bias) {
  if (!cpu_bf16_linear_applies(x, w, bias)) return torch::nn::functional::linear(x, w, bias);
  const bool grad = torch::GradMode::is_enabled() &&
                    (x.requires_grad() || w.requires_grad() || (bias.defined() && bias.requires_grad()));
  if (!grad) return bf16_linear_values(x, w, bias);
  return Bf16LinearFn::apply(x, w, bias.defined() ? bias : torch::empty({0}, w.options()), bias.defined());
}

}  // namespace rlf

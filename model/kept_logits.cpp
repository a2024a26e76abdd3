#include "model/kept_logits.h"

#include <algorithm>

#include "model/cpu_kernels.h"
#include "model/grad_in_place.h"
#include "util/error.h"

namespace rlf {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// Positions per chunk of the generic path: bounds the gathered [rows, M, D] weight rows.
int64_t chunk_rows(int64_t M, int64_t D) { return std::max<int64_t>(1, (int64_t{1} << 24) / std::max<int64_t>(1, M * D)); }

bool on_kernels(const torch::Tensor& hidden, const torch::Tensor& weight) {
  return hidden.is_cpu() && weight.is_cpu() && hidden.scalar_type() == torch::kFloat32 &&
         weight.scalar_type() == torch::kFloat32;
}

torch::Tensor forward_values(const torch::Tensor& h, const torch::Tensor& w, const torch::Tensor& ids) {
  const int64_t N = h.size(0), D = h.size(1), M = ids.size(1);
  if (on_kernels(h, w)) {
    auto out = torch::empty({N, M}, h.options());
    cpu::gathered_dots(h.data_ptr<float>(), w.data_ptr<float>(), ids.data_ptr<int64_t>(), N, M, D,
                       out.data_ptr<float>());
    return out;
  }
  auto out = torch::empty({N, M}, h.options());
  const int64_t rows = chunk_rows(M, D);
  for (int64_t r0 = 0; r0 < N; r0 += rows) {
    const int64_t n = std::min(rows, N - r0);
    const auto wk = w.index_select(0, ids.narrow(0, r0, n).reshape({-1})).view({n, M, D});
    out.narrow(0, r0, n).copy_(torch::bmm(wk, h.narrow(0, r0, n).unsqueeze(-1)).squeeze(-1));
  }
  return out;
}

struct KeptLogitsFn : public torch::autograd::Function<KeptLogitsFn> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& hidden, const torch::Tensor& weight,
                               const torch::Tensor& ids) {
    ctx->save_for_backward({hidden, weight, ids});
    return forward_values(hidden, weight, ids);
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const variable_list saved = ctx->get_saved_variables();
    const torch::Tensor h = saved[0].detach(), w = saved[1].detach(), ids = saved[2];
    const bool need_h = saved[0].requires_grad(), need_w = saved[1].requires_grad();
    const torch::Tensor g = grads[0].contiguous();
    const int64_t N = h.size(0), D = h.size(1), M = ids.size(1), V = w.size(0);
    torch::Tensor dh;
    const torch::Tensor in_place = need_w ? grad_buffer_in_place(saved[1]) : torch::Tensor();
    // Summed in fp32 for bf16/fp16 weights (cast once at the end), or into a large fp32 .grad in place.
    const auto wt = w.scalar_type();
    const auto sum_type = wt == torch::kBFloat16 || wt == torch::kFloat16 ? torch::kFloat32 : wt;
    torch::Tensor dw = in_place.defined() ? in_place
                       : need_w           ? torch::zeros(w.sizes(), w.options().dtype(sum_type))
                                          : torch::Tensor();
    if (on_kernels(h, w)) {
      const auto gf = g.to(torch::kFloat32).contiguous();
      if (need_h) {
        dh = torch::empty_like(h);
        cpu::gathered_dots_backward_input(gf.data_ptr<float>(), w.data_ptr<float>(), ids.data_ptr<int64_t>(), N, M,
                                          D, dh.data_ptr<float>());
      }
      if (need_w)
        cpu::gathered_dots_backward_weight(gf.data_ptr<float>(), h.data_ptr<float>(), ids.data_ptr<int64_t>(), N, M,
                                           D, V, dw.data_ptr<float>());
    } else {
      if (need_h) dh = torch::empty_like(h);
      const int64_t rows = chunk_rows(M, D);
      for (int64_t r0 = 0; r0 < N; r0 += rows) {
        const int64_t n = std::min(rows, N - r0);
        const auto flat = ids.narrow(0, r0, n).reshape({-1});
        const auto gc = g.narrow(0, r0, n);
        if (need_h) {
          const auto wk = w.index_select(0, flat).view({n, M, D});
          dh.narrow(0, r0, n).copy_(torch::bmm(gc.unsqueeze(1), wk).squeeze(1));
        }
        if (need_w)
          dw.index_add_(0, flat,
                        (gc.unsqueeze(-1) * h.narrow(0, r0, n).unsqueeze(1)).reshape({n * M, D}).to(sum_type));
      }
    }
    if (in_place.defined()) return {dh, torch::Tensor(), torch::Tensor()};
    return {dh, need_w ? dw.to(w.scalar_type()) : dw, torch::Tensor()};
  }
};

}  // namespace

torch::Tensor kept_logits(const torch::Tensor& hidden, const torch::Tensor& weight, const torch::Tensor& ids) {
  check(hidden.dim() == 2 && weight.dim() == 2 && hidden.size(1) == weight.size(1),
        "kept_logits: hidden [N, D] and weight [V, D] expected, got ", hidden.sizes(), " and ", weight.sizes());
  check(ids.dim() == 2 && ids.size(0) == hidden.size(0) && ids.scalar_type() == torch::kInt64,
        "kept_logits: ids must be [N, M] int64 with N = ", hidden.size(0), ", got ", ids.sizes());
  const auto i = ids.to(weight.device()).contiguous();
  if (i.numel() > 0) {
    const auto [lo, hi] = torch::aminmax(i);
    check(lo.item<int64_t>() >= 0 && hi.item<int64_t>() < weight.size(0), "kept_logits: an id is outside [0, ",
          weight.size(0), ")");
  }
  const auto h = hidden.contiguous(), w = weight.contiguous();
  if (!torch::GradMode::is_enabled() || !(hidden.requires_grad() || weight.requires_grad())) {
    torch::NoGradGuard ng;
    return forward_values(h, w, i);
  }
  return KeptLogitsFn::apply(h, w, i);
}

}  // namespace rlf

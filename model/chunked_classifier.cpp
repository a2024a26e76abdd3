#include "model/chunked_classifier.h"

#include "model/cpu_bf16_linear.h"
#include "model/grad_in_place.h"
#include "util/error.h"

namespace rlf {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// The head and chunking, held in the context as a capsule (model/recompute.cpp says why).
struct ChunkedState : torch::CustomClassHolder {
  ClassifierHead head;
  int64_t chunk = 1;
};

// The head over every chunk (no autograd), outputs concatenated over positions.
variable_list evaluate(const ChunkedState& s, const torch::Tensor& hidden, const torch::Tensor& weight) {
  const int64_t T = hidden.size(1);
  std::vector<variable_list> parts;
  for (int64_t t0 = 0; t0 < T; t0 += s.chunk) {
    const int64_t n = std::min(s.chunk, T - t0);
    parts.push_back(s.head(linear_layer(hidden.narrow(1, t0, n), weight), t0, n));
    check(parts.back().size() == parts.front().size(), "chunked_classifier: the head's output count changed");
    for (size_t i = 0; i < parts.back().size(); ++i)
      check(parts.back()[i].defined(), "chunked_classifier: head output ", i, " is undefined");
  }
  variable_list out;
  for (size_t i = 0; i < parts.front().size(); ++i) {
    variable_list col;
    for (const auto& p : parts) col.push_back(p[i]);
    out.push_back(col.size() == 1 ? col[0] : torch::cat(col, 1));
  }
  return out;
}

// Each output behind its own (view) node: LibTorch 1.13's retain_grad hook
// fails on an undefined gradient, which one multi-output node would hand it
// for an output the loss does not read (a retained entropy with a loss of
// log-probs only); a view that receives no gradient never runs.
variable_list separate_nodes(variable_list out) {
  for (auto& o : out) o = o.view_as(o);
  return out;
}

struct ChunkedClassifierFn : public torch::autograd::Function<ChunkedClassifierFn> {
  static variable_list forward(AutogradContext* ctx, c10::intrusive_ptr<ChunkedState> state,
                               const torch::Tensor& hidden, const torch::Tensor& weight) {
    ctx->save_for_backward({hidden, weight});
    ctx->set_materialize_grads(false);
    ctx->saved_data["state"] = c10::IValue::make_capsule(state);
    return evaluate(*state, hidden, weight);
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    auto state = c10::static_intrusive_pointer_cast<ChunkedState>(ctx->saved_data["state"].toCapsule());
    const variable_list saved = ctx->get_saved_variables();
    const torch::Tensor hidden = saved[0].detach(), weight = saved[1].detach();
    const bool need_h = saved[0].requires_grad(), need_w = saved[1].requires_grad();
    const int64_t B = hidden.size(0), T = hidden.size(1), D = hidden.size(2), V = weight.size(0);
    torch::Tensor dh = need_h ? torch::zeros_like(hidden) : torch::Tensor();
    // The weight's gradient sums over chunks in fp32 (for bf16/fp16 weights too), cast once at the end;
    // or, for a large fp32 parameter, straight into its .grad (model/grad_in_place.h).
    const torch::Tensor in_place = need_w ? grad_buffer_in_place(saved[1]) : torch::Tensor();
    torch::Tensor dw = in_place.defined() ? in_place
                       : need_w           ? torch::zeros(weight.sizes(), weight.options().dtype(torch::kFloat32))
                                          : torch::Tensor();
    for (int64_t t0 = 0; t0 < T; t0 += state->chunk) {
      const int64_t n = std::min(state->chunk, T - t0);
      const torch::Tensor h = hidden.narrow(1, t0, n);
      torch::Tensor z = linear_layer(h, weight).requires_grad_(true);  // [B, n, V]
      variable_list ys, gs;
      {
        torch::AutoGradMode on(true);
        const variable_list out = state->head(z, t0, n);
        check(out.size() == grads.size(), "chunked_classifier: the head's output count changed");
        for (size_t i = 0; i < out.size(); ++i)
          if (out[i].defined() && out[i].requires_grad() && grads[i].defined()) {
            ys.push_back(out[i]);
            gs.push_back(grads[i].narrow(1, t0, n));
          }
      }
      if (ys.empty()) continue;
      const torch::Tensor dz = torch::autograd::grad(ys, {z}, gs, false, false, true)[0];
      if (!dz.defined()) continue;
      if (need_h) dh.narrow(1, t0, n).copy_(linear_layer_input_grad(dz, weight));
      if (need_w) dw.addmm_(dz.reshape({B * n, V}).to(torch::kFloat32).t(), h.reshape({B * n, D}).to(torch::kFloat32));
    }
    if (in_place.defined()) return {torch::Tensor(), dh, torch::Tensor()};
    return {torch::Tensor(), dh, need_w ? dw.to(weight.scalar_type()) : dw};
  }
};

}  // namespace

std::vector<torch::Tensor> chunked_classifier(const ClassifierHead& head, const torch::Tensor& hidden,
                                              const torch::Tensor& weight, int64_t chunk) {
  check(hidden.dim() == 3 && weight.dim() == 2 && hidden.size(2) == weight.size(1),
        "chunked_classifier: hidden [B, T, D] and weight [V, D] expected, got ", hidden.sizes(), " and ",
        weight.sizes());
  check(chunk >= 1, "chunked_classifier: chunk = ", chunk, " (at least 1 position)");
  auto state = c10::make_intrusive<ChunkedState>();
  state->head = head;
  state->chunk = chunk;
  if (!torch::GradMode::is_enabled() || !(hidden.requires_grad() || weight.requires_grad()))
    return evaluate(*state, hidden, weight);
  return separate_nodes(ChunkedClassifierFn::apply(state, hidden, weight));
}

}  // namespace rlf

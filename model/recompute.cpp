#include "model/recompute.h"

#include "util/error.h"

namespace rlf {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// What backward needs besides the saved inputs: the function and the
// parameters to differentiate for (held in the context as a capsule, the one
// IValue kind that carries an arbitrary C++ object without registration).
struct RecomputeState : torch::CustomClassHolder {
  RecomputeFn fn;
  size_t n_inputs = 0;
  std::vector<torch::Tensor> params;
  std::vector<torch::Generator> generators;
  std::vector<torch::Tensor> states;  // the generators' states before the first run
};

torch::Tensor state_of(torch::Generator& g) {
  std::lock_guard<std::mutex> lock(g.mutex());
  return g.get_state();
}

void set_state_of(torch::Generator& g, const torch::Tensor& s) {
  std::lock_guard<std::mutex> lock(g.mutex());
  g.set_state(s);
}

// Leaves with the tensors' values, requiring a gradient where they do.
variable_list detached_like(const variable_list& tensors) {
  variable_list out;
  for (const auto& t : tensors) {
    auto x = t.detach();
    if (t.requires_grad()) x.requires_grad_(true);
    out.push_back(x);
  }
  return out;
}

struct RecomputeFunction : public torch::autograd::Function<RecomputeFunction> {
  // tensors: the inputs, then the parameters (so that their gradient edges
  // are this node's, and a node exists when only a parameter needs one).
  static variable_list forward(AutogradContext* ctx, c10::intrusive_ptr<RecomputeState> state,
                               at::TensorList tensors) {
    const variable_list inputs(tensors.begin(), tensors.begin() + static_cast<int64_t>(state->n_inputs));
    ctx->save_for_backward(inputs);
    ctx->set_materialize_grads(false);
    // Grad mode on as in the recomputation (code that reads it as "training",
    // as LoRA dropout and the fast path's kernels do, then takes the same
    // branch both times); the graph dies with the detached outputs.
    variable_list out;
    {
      torch::AutoGradMode on(true);
      out = state->fn(detached_like(inputs));
    }
    for (size_t i = 0; i < out.size(); ++i) {
      check(out[i].defined(), "recompute: output ", i, " of the function is undefined");
      out[i] = out[i].detach();
    }
    ctx->saved_data["state"] = c10::IValue::make_capsule(state);
    return out;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    auto state = c10::static_intrusive_pointer_cast<RecomputeState>(ctx->saved_data["state"].toCapsule());
    const variable_list inputs = detached_like(ctx->get_saved_variables());
    variable_list outputs;
    std::vector<torch::Tensor> now;  // the generators' states now, set back after the rerun
    for (size_t i = 0; i < state->generators.size(); ++i) {
      now.push_back(state_of(state->generators[i]));
      set_state_of(state->generators[i], state->states[i]);
    }
    {
      torch::AutoGradMode on(true);
      outputs = state->fn(inputs);
    }
    for (size_t i = 0; i < now.size(); ++i) set_state_of(state->generators[i], now[i]);
    check(outputs.size() == grads.size(), "recompute: the function returned ", outputs.size(),
          " outputs in backward, ", grads.size(), " in forward");
    variable_list ys, gs;
    for (size_t i = 0; i < outputs.size(); ++i)
      if (outputs[i].defined() && outputs[i].requires_grad() && grads[i].defined()) {
        ys.push_back(outputs[i]);
        gs.push_back(grads[i]);
      }
    // Differentiated for: the inputs and parameters that need a gradient.
    variable_list wrt;
    std::vector<size_t> slot;  // index into `tensors` (after the state argument)
    for (size_t i = 0; i < inputs.size(); ++i)
      if (inputs[i].requires_grad()) wrt.push_back(inputs[i]), slot.push_back(i);
    for (size_t i = 0; i < state->params.size(); ++i)
      if (state->params[i].requires_grad()) wrt.push_back(state->params[i]), slot.push_back(inputs.size() + i);
    variable_list result(1 + inputs.size() + state->params.size());  // undefined: no gradient
    if (ys.empty() || wrt.empty()) return result;
    const variable_list g = torch::autograd::grad(ys, wrt, gs, /*retain_graph=*/false, /*create_graph=*/false,
                                                  /*allow_unused=*/true);
    for (size_t j = 0; j < wrt.size(); ++j) result[1 + slot[j]] = g[j];
    return result;
  }
};

}  // namespace

std::vector<torch::Tensor> recompute(const RecomputeFn& fn, const std::vector<torch::Tensor>& inputs,
                                     const std::vector<torch::Tensor>& params,
                                     const std::vector<torch::Generator>& generators) {
  bool needs = false;
  for (const auto& t : inputs) needs |= t.defined() && t.requires_grad();
  for (const auto& t : params) needs |= t.defined() && t.requires_grad();
  if (!torch::GradMode::is_enabled() || !needs) return fn(inputs);
  for (size_t i = 0; i < inputs.size(); ++i) check(inputs[i].defined(), "recompute: input ", i, " is undefined");
  for (size_t i = 0; i < params.size(); ++i) check(params[i].defined(), "recompute: parameter ", i, " is undefined");
  auto state = c10::make_intrusive<RecomputeState>();
  state->fn = fn;
  state->n_inputs = inputs.size();
  state->params = params;
  state->generators = generators;
  for (auto g : generators) state->states.push_back(state_of(g));
  variable_list tensors = inputs;
  tensors.insert(tensors.end(), params.begin(), params.end());
  // (a TensorList, not a vector: Function::apply sees the tensors of a TensorList only)
  variable_list out = RecomputeFunction::apply(state, at::TensorList(tensors));
  // Each output behind its own (view) node (model/chunked_classifier.cpp's
  // separate_nodes says why).
  for (auto& o : out) o = o.view_as(o);
  return out;
}

}  // namespace rlf

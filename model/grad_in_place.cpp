#include "model/grad_in_place.h"

#include "util/error.h"

namespace rlf {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

struct EmbeddingFn : public torch::autograd::Function<EmbeddingFn> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& weight, const torch::Tensor& ids) {
    ctx->save_for_backward({weight, ids});
    std::vector<int64_t> shape = ids.sizes().vec();
    shape.push_back(weight.size(1));
    return weight.index_select(0, ids.reshape({-1})).view(shape);
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const variable_list saved = ctx->get_saved_variables();
    const torch::Tensor &weight = saved[0], ids = saved[1].reshape({-1});
    const torch::Tensor g = grads[0].reshape({-1, weight.size(1)});
    // Only into a .grad that exists: before it does, autograd holds the
    // table's other gradient (a plain classifier's) until this one arrives,
    // and a new .grad beside it would be one more [V, D] (measured: +536 MB).
    if (grad_in_place(weight) && weight.grad().defined()) {
      grad_buffer_in_place(weight).index_add_(0, ids, g);
      return {torch::Tensor(), torch::Tensor()};
    }
    return {torch::zeros_like(weight).index_add_(0, ids, g), torch::Tensor()};
  }
};

}  // namespace

bool grad_in_place(const torch::Tensor& param) {
  return param.defined() && param.is_leaf() && param.requires_grad() && param.scalar_type() == torch::kFloat32 &&
         param.numel() >= kInPlaceGradElements;
}

torch::Tensor embedding_lookup(const torch::Tensor& weight, const torch::Tensor& ids) {
  check(weight.dim() == 2 && ids.scalar_type() == torch::kInt64, "embedding_lookup: weight [V, D] and int64 ids expected");
  if (!torch::GradMode::is_enabled() || !grad_in_place(weight)) return torch::embedding(weight, ids);
  return EmbeddingFn::apply(weight, ids);
}

torch::Tensor grad_buffer_in_place(const torch::Tensor& param) {
  if (!grad_in_place(param)) return {};
  torch::Tensor& g = const_cast<torch::Tensor&>(param).mutable_grad();
  if (!g.defined()) g = torch::zeros_like(param, torch::MemoryFormat::Contiguous);
  return g;
}

}  // namespace rlf

// Recompute in backward (activation checkpointing's primitive): run a
// function of some tensors without keeping its autograd graph, and in
// backward run it again with autograd on and back-propagate through it.
// What the graph would have kept (a layer's activations, a chunk's
// [rows, V] logits) lives only while one recomputation's backward runs.
//
//   auto out = recompute([&](const std::vector<torch::Tensor>& in) {
//     return std::vector<torch::Tensor>{layer->forward(in[0])};
//   }, {x}, layer->parameters());
//
// Contract:
// - `fn` must compute the same function both times: deterministic, no
//   dropout or other RNG draw, no in-place change of what it reads. Tensors
//   it captures (masks, tables, integer targets) get no gradient and must
//   stay unchanged until backward.
// - `inputs`: the tensors gradients flow to and from through `fn`'s
//   arguments (saved for backward; integer tensors allowed). `params`: every
//   other tensor `fn` reads that needs a gradient (module parameters,
//   adapters). Gradients reach both as they would without recompute:
//   returned through the graph like any node's (so torch::autograd::grad
//   and frozen inputs with trainable parameters work, unlike PyTorch's
//   reentrant checkpoint, which accumulates parameter gradients into .grad
//   during its nested backward). A parameter `fn` reads but `params` omits
//   gets no gradient.
// - `fn` runs under grad mode both times (so code that reads grad mode as
//   "training", as LoRA dropout and the fp32 CPU fast path do, takes the same
//   branch); the first run's graph is dropped with its detached outputs, so
//   its peak is one run's activations.
// - Outputs: each must be defined; one that `fn` returns without autograd
//   history (a logged statistic) gets no gradient.
//   Outputs returned by recompute() carry the gradient function even for
//   such values: detach them if they must not.
// - `generators`: the random generators `fn` draws from (LoRA dropout's):
//   their states before the first run are restored for the recomputation,
//   which therefore draws the same masks, and set back after it.
// - With grad mode off, or nothing in inputs/params requiring a gradient,
//   it is a plain call of fn(inputs).
// - Backward reruns fn once per call; the nested backward goes through the
//   same autograd engine (a reentrant call), on any device.
#pragma once

#include <torch/torch.h>

#include <functional>
#include <vector>

namespace rlf {

using RecomputeFn = std::function<std::vector<torch::Tensor>(const std::vector<torch::Tensor>&)>;

std::vector<torch::Tensor> recompute(const RecomputeFn& fn, const std::vector<torch::Tensor>& inputs,
                                     const std::vector<torch::Tensor>& params,
                                     const std::vector<torch::Generator>& generators = {});

}  // namespace rlf

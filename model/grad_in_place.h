// Gradients summed straight into a large parameter's own .grad.
//
// Autograd hands a leaf's gradient to the engine, which adds it to .grad:
// for the embedding table (and the tied classifier that shares it) that is
// one more dense [V, D] tensor alive while backward ends, 544 MB in fp32 at
// Qwen's 151,936 x 896, when every other gradient already exists. Here the
// embedding lookup's backward index-adds its rows into .grad itself, and the
// vocabulary-chunked classifier (model/chunked_classifier.h) sums its
// weight's gradient into .grad chunk by chunk, so no second [V, D] tensor
// exists. The values are the same to float rounding (the sums run in
// another order), so this applies only where it matters: an fp32 leaf that
// requires a gradient and holds at least kInPlaceGradElements elements
// (2^24: no built-in example's model reaches it, so their numbers do not
// change); other tensors take the usual path.
#pragma once

#include <torch/torch.h>

#include <cstdint>

namespace rlf {

inline constexpr int64_t kInPlaceGradElements = int64_t{1} << 24;

// Whether `param`'s gradient is summed in place (the rule above).
bool grad_in_place(const torch::Tensor& param);

// weight[ids]: [..., D] for ids [...] int64, as torch::nn::Embedding (no
// padding index, no max norm); under autograd its backward adds into
// weight.grad directly when grad_in_place(weight) and .grad exists by then
// (the chunked classifier made it, or an earlier micro-batch); otherwise it
// hands autograd the usual dense gradient.
torch::Tensor embedding_lookup(const torch::Tensor& weight, const torch::Tensor& ids);

// For a backward that sums `param`'s gradient itself: param.grad (created as
// zeros when undefined) when grad_in_place(param), else undefined (return
// the gradient to the engine as usual).
torch::Tensor grad_buffer_in_place(const torch::Tensor& param);

}  // namespace rlf

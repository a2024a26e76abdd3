// Shape and dtype checks shared by the per-token functions of rlf_algorithms
// (internal). Each throws rlf::Error naming the function and the argument.
#pragma once

#include <string_view>

#include <torch/types.h>

#include "util/error.h"

namespace rlf::algo::detail {

// `t` is a defined [B, T] tensor.
inline void check_bt(const torch::Tensor& t, std::string_view fn, std::string_view name) {
  check(t.defined(), fn, ": ", name, " is an undefined tensor");
  check(t.dim() == 2, fn, ": ", name, " must be [B, T], got ", t.sizes());
}

// `t` is a floating-point tensor with the sizes of `like`.
inline void check_float_like(const torch::Tensor& t, const torch::Tensor& like, std::string_view fn,
                             std::string_view name, std::string_view like_name) {
  check(t.defined(), fn, ": ", name, " is an undefined tensor");
  check(t.sizes() == like.sizes(), fn, ": ", name, " has shape ", t.sizes(), " but ", like_name, " has ",
        like.sizes(), "; they must match");
  check(c10::isFloatingType(t.scalar_type()), fn, ": ", name, " must be a floating tensor, got ",
        t.scalar_type());
}

}  // namespace rlf::algo::detail

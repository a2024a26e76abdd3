// Reading the oracle's JSON logits (tests/oracle/hf_tiny_models.py) as tensors,
// for the tests that compare rlf's logits with transformers' (CPU and GPU).
#pragma once

#include <torch/torch.h>

#include <functional>
#include <vector>

#include "util/json_util.h"

namespace rlf::test {

// A nested JSON array of numbers (any depth, rectangular) as an fp32 tensor of its shape.
inline torch::Tensor json_to_tensor(const Json& j) {
  std::vector<float> flat;
  std::vector<int64_t> shape;
  const Json* cur = &j;
  while (cur->is_array()) {
    shape.push_back(static_cast<int64_t>(cur->size()));
    cur = &(*cur)[0];
  }
  std::function<void(const Json&)> walk = [&](const Json& x) {
    if (x.is_array())
      for (const auto& e : x) walk(e);
    else
      flat.push_back(x.get<float>());
  };
  walk(j);
  return torch::tensor(flat).view(shape);
}

}  // namespace rlf::test

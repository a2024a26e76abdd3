// Small tensor helpers shared by the tests: float64 options, NaN/Inf
// constants, a matrix from row-major values, the largest absolute difference.
#pragma once

#include <cstdint>
#include <limits>
#include <vector>

#include <torch/torch.h>

namespace rlf::test {

inline const auto kF64 = torch::TensorOptions().dtype(torch::kFloat64);
inline const double kInf = std::numeric_limits<double>::infinity();
inline const double kNaN = std::numeric_limits<double>::quiet_NaN();

// A float64 [rows, cols] tensor from row-major values.
inline torch::Tensor mat(int64_t rows, int64_t cols, std::vector<double> v) {
  return torch::tensor(v, kF64).view({rows, cols});
}

// max |a - b| over all elements.
inline double max_diff(const torch::Tensor& a, const torch::Tensor& b) { return (a - b).abs().max().item<double>(); }

}  // namespace rlf::test

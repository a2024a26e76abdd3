// Gradients against central finite differences (float64), shared by the
// loss tests: autograd's gradient of sum(loss(x)) at x0 against the central
// difference quotient of sum(surrogate(x)) — the same function when the
// loss is differentiated as written, or the surrogate whose gradient a
// stop-gradient objective takes (CISPO, DPPO).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>

#include <torch/torch.h>

namespace rlf::test {

using TensorFn = std::function<torch::Tensor(const torch::Tensor&)>;

inline void expect_grad_is_fd_of(const TensorFn& loss, const TensorFn& surrogate, const torch::Tensor& x0,
                                 double h = 1e-6, double tol = 1e-6) {
  auto x = x0.detach().clone().requires_grad_(true);
  loss(x).sum().backward();
  const auto g = x.grad().contiguous().view(-1);
  const auto flat = x0.detach().contiguous().view(-1);
  torch::NoGradGuard no_grad;
  for (int64_t i = 0; i < flat.numel(); ++i) {
    auto xp = flat.clone(), xm = flat.clone();
    xp[i] += h;
    xm[i] -= h;
    const double fd =
        (surrogate(xp.view(x0.sizes())).sum().item<double>() - surrogate(xm.view(x0.sizes())).sum().item<double>()) /
        (2 * h);
    EXPECT_NEAR(g[i].item<double>(), fd, tol * std::max(1.0, std::abs(fd))) << "element " << i;
  }
}

// The gradient of f itself.
inline void expect_grad_matches_fd(const TensorFn& f, const torch::Tensor& x0, double h = 1e-6, double tol = 1e-6) {
  expect_grad_is_fd_of(f, f, x0, h, tol);
}

}  // namespace rlf::test

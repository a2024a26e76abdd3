// ArmoRM's gating layer (Wang et al. 2024, "Interpretable Preferences via
// Multi-Objective Reward Modeling and Mixture-of-Experts"): a small network
// over the prompt's features h(x) — the reward model's hidden state at the
// prompt's last token — that weighs the model's K attribute scores per
// prompt:
//
//   g(x) = softmax(z(x) / tau),  z = W2 relu(W1 h + b1) + b2  (or W h + b with hidden = 0)
//   r(x, y) = s * sum_k g_k(x) r_k(x, y),  s = exp(log_scale)
//
// (algo::gated_reward). It is fitted after the heads, with the backbone and
// heads frozen, by the Bradley-Terry loss on preference pairs — a full-batch
// Adam fit on cached features, seconds on a CPU. It is stored beside the
// model as gating.safetensors (tensors gating.w1, gating.b1, gating.w2,
// gating.b2, gating.log_scale; metadata hidden, temperature, attributes):
// transformers loads the directory as the K-output classifier it is, and
// rlf's `reward_model` reward and `rlf eval rm` apply the gating on top.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <torch/types.h>

namespace rlf {

struct GatingOptions {
  int64_t hidden = 32;       // units of the hidden layer (0 = a linear gating layer)
  int64_t steps = 300;       // full-batch Adam steps of the fit
  double lr = 0.01;          // Adam's learning rate
  double temperature = 1.0;  // tau of the softmax
  uint64_t seed = 0;         // the initial weights
  void validate() const;     // errors name reward_model.gating_* keys
};

// What a fit did: the Bradley-Terry loss and pairwise accuracy on the pairs
// it was fitted on, before (uniform weights, scale 1) and after.
struct GatingFit {
  double loss_before = 0, loss_after = 0;
  double accuracy_before = 0, accuracy_after = 0;
  int64_t pairs = 0;
};

class RewardGating {
 public:
  // A fresh gating layer over `input_dim` features and `attributes` (K >= 1)
  // outputs: normal(0, 1/sqrt(fan_in)) weights from options.seed, zero biases,
  // scale 1 (the last layer starts at zero: uniform weights).
  RewardGating(int64_t input_dim, std::vector<std::string> attributes, const GatingOptions& options);

  // Fits on pairs: context [P, D] (the prompt's features), chosen and
  // rejected scores [P, K]; all fp32 on the CPU.
  GatingFit fit(const torch::Tensor& context, const torch::Tensor& chosen, const torch::Tensor& rejected);

  // The attribute weights g(x) [N, K] and the gated reward [N] (no gradient).
  torch::Tensor weights(const torch::Tensor& context) const;
  torch::Tensor reward(const torch::Tensor& context, const torch::Tensor& scores) const;

  const std::vector<std::string>& attributes() const { return attributes_; }
  int64_t input_dim() const { return input_dim_; }

  // gating.safetensors in `model_dir` (written atomically).
  void save(const std::filesystem::path& model_dir) const;
  // The gating stored in `model_dir`, or nullopt when it has none; errors name the file.
  static std::optional<RewardGating> load(const std::filesystem::path& model_dir);

 private:
  RewardGating() = default;
  torch::Tensor logits(const torch::Tensor& context) const;

  int64_t input_dim_ = 0;
  int64_t hidden_ = 0;
  double temperature_ = 1.0;
  GatingOptions options_;  // steps and lr of a fit
  std::vector<std::string> attributes_;
  torch::Tensor w1_, b1_, w2_, b2_, log_scale_;  // w1/b1 undefined when hidden = 0
};

// The file a model directory's gating layer lives in.
inline constexpr const char* kGatingFile = "gating.safetensors";

}  // namespace rlf

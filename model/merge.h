// Weight merging of models with one architecture (`rlf merge`):
//
//   soup             theta = sum_i w_i theta_i
//                    (model soups, Wortsman et al. 2022; weight-averaged
//                    reward models, WARM, Rame et al. 2024; w_i = 1/n by
//                    default)
//   task arithmetic  theta = theta_base + sum_i w_i (theta_i - theta_base)
//                    (Ilharco et al. 2023), with a base model
//
// computed parameter by parameter in fp64 (the result is fp32; `rlf merge`
// writes the first model's dtype). Every model must have the same config (architecture, shapes,
// classifier head) as the first; a mismatch is an error naming the model
// and what differs. A model holding NaN or infinite weights, or a merge whose
// result does, is an error naming the tensor (model/finite_weights.h).
#pragma once

#include <filesystem>
#include <optional>
#include <vector>

#include "model/loader.h"

namespace rlf {

struct MergeOptions {
  std::vector<std::filesystem::path> models;    // at least one
  std::vector<double> weights;                  // one per model; empty = 1/n each
  std::optional<std::filesystem::path> base;    // task arithmetic: the model the differences are taken from
};

// The merged model (a new fp32 module on the CPU);
// `first` receives the first model as loaded (its tokenizer and generation
// defaults go with the merge).
CausalLM merge_models(const MergeOptions& options, LoadedModel* first = nullptr);

}  // namespace rlf

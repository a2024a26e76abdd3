// The model a benchmark runs: a preset shape with random weights
// ("stories110M", see ModelConfig::preset) or, when `shape` names an existing
// path, a real model (HF directory or llama2.c .bin) loaded in `dtype`.
#pragma once

#include <cstdint>
#include <string>

#include "model/transformer.h"

namespace rlf {

struct BenchModel {
  CausalLM model{nullptr};
  std::string source;  // "random" | "weights"
};

BenchModel make_bench_model(const std::string& shape, const std::string& dtype, const std::string& device, uint64_t seed);

}  // namespace rlf

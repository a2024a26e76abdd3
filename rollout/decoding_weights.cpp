#include "rollout/decoding_weights.h"

#include <chrono>

namespace rlf::rollout {

DecodingWeights::DecodingWeights(CausalLMImpl& model, double& pack_s) : model_(model) {
  const auto t0 = std::chrono::steady_clock::now();
  model_.pack_for_decoding();
  pack_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

DecodingWeights::~DecodingWeights() { model_.release_decoding_weights(); }

}  // namespace rlf::rollout

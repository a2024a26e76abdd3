// Weight packing for decoding: the model's weights packed into column panels
// (CausalLMImpl::pack_for_decoding, model/packed_weights.h) while one
// generate or serve call runs. Packed afresh at the call's start, since
// whatever ran before (an optimizer step, a LoRA merge) may have changed the
// weights, and freed at its end, so training between rollouts does not hold a
// second copy. A model whose set_pack_weights(false) says not to (or one the
// packing does not apply to: not fp32 CPU) packs nothing.
#pragma once

#include "model/transformer.h"

namespace rlf::rollout {

// Scoped: packs in the constructor (adding the time to `pack_s`, seconds),
// frees in the destructor.
class DecodingWeights {
 public:
  DecodingWeights(CausalLMImpl& model, double& pack_s);
  ~DecodingWeights();
  DecodingWeights(const DecodingWeights&) = delete;
  DecodingWeights& operator=(const DecodingWeights&) = delete;

 private:
  CausalLMImpl& model_;
};

}  // namespace rlf::rollout

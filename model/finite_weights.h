// Non-finite weights (NaN, +-inf) found before a model is written: a merge or
// an export of such a model would write a file that generates garbage (or, in
// llama.cpp, a q8_0 block scale of NaN) without a word. Writers that make a
// model from others (`rlf merge`, `rlf export`) check here and refuse, naming
// the tensor.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "model/transformer.h"

namespace rlf {

struct NonFiniteTensor {
  std::string name;   // the parameter's name (Hugging Face's), e.g. "model.layers.0.self_attn.q_proj.weight"
  int64_t n_nan = 0;  // NaN values in it
  int64_t n_inf = 0;  // +-inf values in it
  int64_t numel = 0;  // values in it
};

// The first parameter of `model` (named_parameters order) holding a NaN or an
// infinity; nullopt when every value is finite.
std::optional<NonFiniteTensor> find_non_finite(CausalLMImpl& model);

// Throws "tensor 'NAME' holds 3 NaN values (of 4096): ..." when
// find_non_finite finds one; `what` says what is not written ("the merged model").
void check_finite_weights(CausalLMImpl& model, const std::string& what);

}  // namespace rlf

// TensorView: a torch-free, non-owning view of one tensor inside a loaded
// checkpoint (a memory-mapped safetensors shard or llama2.c file). The view
// holds a shared reference to whatever owns the bytes (the mapping), so it
// stays valid for as long as the view lives; copying a view never copies data.
// The LibTorch side wraps `data` with torch::from_blob and copies it once into
// a parameter.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace rlf {

// Element types of the safetensors format (names as in its header). Model
// weights may be F32, F16 or BF16; the others are parsed so that any valid file
// opens, and rejected later where a weight is required.
enum class DType { BOOL, U8, I8, I16, U16, F16, BF16, I32, U32, F32, F64, I64, U64 };

// Bytes per element.
size_t dtype_size(DType dtype);

// The safetensors header spelling: "F32", "BF16", ...
const char* dtype_name(DType dtype);

// Parses a safetensors dtype name; std::nullopt for an unknown one.
std::optional<DType> dtype_from_name(std::string_view name);

// True for the floating types a model weight may be stored in (F32, F16, BF16).
bool is_weight_dtype(DType dtype);

// "[2, 3]" — for error messages.
std::string shape_string(const std::vector<int64_t>& shape);

struct TensorView {
  const uint8_t* data = nullptr;        // first byte (row-major, little-endian, no strides)
  size_t nbytes = 0;                    // == numel() * dtype_size(dtype)
  DType dtype = DType::F32;
  std::vector<int64_t> shape;           // [] is a scalar (one element)
  // > 0: this is a llama2.c q_proj/k_proj weight whose rows are in interleaved
  // RoPE order for this many heads; permute_rope_rows() (model/llama2c.h)
  // turns them into Hugging Face's rotate-half order. 0: standard order.
  int64_t interleaved_rope_heads = 0;
  std::shared_ptr<const void> keep_alive;  // owner of the bytes (the mapping)

  int64_t numel() const;
};

// Tensor name (Hugging Face's, e.g. "model.layers.0.self_attn.q_proj.weight") → view.
using TensorMap = std::map<std::string, TensorView>;

}  // namespace rlf

#include "model/tensor_view.h"

#include "util/error.h"

namespace rlf {

namespace {

struct DTypeInfo {
  DType dtype;
  const char* name;
  size_t size;
};

constexpr DTypeInfo kDTypes[] = {
    {DType::BOOL, "BOOL", 1}, {DType::U8, "U8", 1},   {DType::I8, "I8", 1},     {DType::I16, "I16", 2},
    {DType::U16, "U16", 2},   {DType::F16, "F16", 2}, {DType::BF16, "BF16", 2}, {DType::I32, "I32", 4},
    {DType::U32, "U32", 4},   {DType::F32, "F32", 4}, {DType::F64, "F64", 8},   {DType::I64, "I64", 8},
    {DType::U64, "U64", 8},
};

const DTypeInfo& info(DType dtype) {
  for (const auto& i : kDTypes)
    if (i.dtype == dtype) return i;
  fail("invalid DType value ", static_cast<int>(dtype));
}

}  // namespace

size_t dtype_size(DType dtype) { return info(dtype).size; }

const char* dtype_name(DType dtype) { return info(dtype).name; }

std::optional<DType> dtype_from_name(std::string_view name) {
  for (const auto& i : kDTypes)
    if (name == i.name) return i.dtype;
  return std::nullopt;
}

bool is_weight_dtype(DType dtype) { return dtype == DType::F32 || dtype == DType::F16 || dtype == DType::BF16; }

std::string shape_string(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

int64_t TensorView::numel() const {
  for (int64_t d : shape)
    if (d == 0) return 0;
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

}  // namespace rlf

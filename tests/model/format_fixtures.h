// Small builders for hand-made model files used by the format tests: raw
// safetensors bytes from a header string, llama2.c files from a header.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "util/error.h"

#include "tests/support/test_env.h"

namespace rlf::test {

// 8-byte little-endian length + `header` (unpadded) + `data`.
inline std::string safetensors_bytes(const std::string& header, const std::string& data) {
  std::string out(8, '\0');
  uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((n >> (8 * i)) & 0xff);
  return out + header + data;
}

inline void put_i32(std::string& s, int32_t v) {
  char b[4];
  std::memcpy(b, &v, 4);
  s.append(b, 4);
}

// A legacy (version 0) llama2.c file: header then `n_floats` floats 0, 1, 2, ...
inline std::string llama2c_v0_bytes(const std::vector<int32_t>& header7, size_t n_floats) {
  std::string s;
  for (int32_t v : header7) put_i32(s, v);
  for (size_t i = 0; i < n_floats; ++i) {
    float f = static_cast<float>(i);
    char b[4];
    std::memcpy(b, &f, 4);
    s.append(b, 4);
  }
  return s;
}


}  // namespace rlf::test

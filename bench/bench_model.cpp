#include "bench/bench_model.h"

#include <filesystem>

#include "model/loader.h"
#include "model/transformer.h"

namespace rlf {

BenchModel make_bench_model(const std::string& shape, const std::string& dtype, const std::string& device,
                            uint64_t seed) {
  BenchModel b;
  if (std::filesystem::exists(shape)) {
    LoadOptions lo;
    lo.dtype = dtype;
    lo.device = device;
    b.model = load_model(shape, lo).model;
    b.source = "weights";
  } else {
    b.model = make_random_model(ModelConfig::preset(shape), seed, parse_dtype(dtype), parse_device(device));
    b.source = "random";
  }
  return b;
}

}  // namespace rlf

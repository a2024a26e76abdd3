#include "train/reducer.h"

#include <string_view>

#include "util/error.h"
#include "util/hash.h"

namespace rlf {

void check_same_config(Reducer& reducer, const std::string& fingerprint) {
  if (reducer.world_size() == 1) return;
  const std::vector<std::string> all = reducer.all_gather(fingerprint);
  std::string differ;
  for (size_t r = 1; r < all.size(); ++r)
    if (all[r] != all[0]) differ += (differ.empty() ? "" : ", ") + std::to_string(r);
  check(differ.empty(), "data-parallel run: the ranks were started with different configs or rlf builds (rank(s) ",
        differ, " differ from rank 0); start every rank with the same config file, --set overrides and binary");
}

void check_replicas_agree(Reducer& reducer, const std::vector<torch::Tensor>& params, int64_t step) {
  if (reducer.world_size() == 1) return;
  std::string hashes;  // FNV-1a of each parameter's bytes, then of their concatenation
  for (const torch::Tensor& p : params) {
    const torch::Tensor c = p.detach().to(torch::kCPU).contiguous();
    hashes += fnv1a64_hex(std::string_view(static_cast<const char*>(c.data_ptr()),
                                           static_cast<size_t>(c.numel()) * c.element_size()));
  }
  const uint64_t h = fnv1a64(hashes);
  // Two exact 32-bit halves; max and -min equal everywhere iff every rank has the same value.
  const double high = static_cast<double>(h >> 32), low = static_cast<double>(h & 0xFFFFFFFFULL);
  struct {
    double high, low, minus_high, minus_low;
  } v{.high = high, .low = low, .minus_high = -high, .minus_low = -low};
  reducer.max_fields(v);
  check(v.high == -v.minus_high && v.low == -v.minus_low, "data-parallel run: the ranks' parameters differ after step ", step,
        " (the replicas diverged: a rank computed a different update, e.g. another device or LibTorch build)");
}

}  // namespace rlf

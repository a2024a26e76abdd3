// FNV-1a 64-bit: the one non-cryptographic hash of rlf (cache file names,
// prompt fingerprints of saved buffers and memories, warm-start cache keys,
// seed derivation). Stable across runs and machines; not for security.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace rlf {

uint64_t fnv1a64(std::string_view data);
// The hash as 16 lower-case hex digits.
std::string fnv1a64_hex(std::string_view data);

}  // namespace rlf

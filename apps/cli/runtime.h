// Process-wide settings applied once at the program's edge, from the common
// options: LibTorch intra-op threads (--threads; 0 = all cores, since
// Debian's LibTorch starts with one) and the device (--device).
#pragma once

#include <string>

#include "apps/cli/cli.h"

namespace rlf::cli {

// Sets the LibTorch thread count; returns the number in effect.
int configure_threads(const Args& args);

// Number of CPU cores available to this process.
int available_cores();

}  // namespace rlf::cli

// The one rule for records too long for the model's context (prompts,
// preference pairs, step-labelled solutions): a record whose length in
// tokens, with everything the run adds to it, exceeds the context is a bad
// record — an error naming it, or (on_bad_record = "skip") dropped and counted.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "util/error.h"

namespace rlf {

// The records of `in` whose length(x) <= limit, in order. For a longer one:
// with `skip`, ++n_dropped; else throws rlf::Error with message(x, length).
template <class T, class Length, class Message>
std::vector<T> fitting_records(const std::vector<T>& in, int64_t limit, bool skip, int64_t& n_dropped, Length&& length,
                               Message&& message) {
  std::vector<T> out;
  for (const T& x : in) {
    const int64_t n = length(x);
    if (n <= limit) {
      out.push_back(x);
      continue;
    }
    if (!skip) fail(message(x, n));
    ++n_dropped;
  }
  return out;
}

}  // namespace rlf

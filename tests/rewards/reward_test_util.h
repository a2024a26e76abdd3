// Helpers shared by the reward suites: building groups and checking errors.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "rewards/reward.h"

#include "tests/support/test_env.h"

namespace rlf::test {

// A group of completions (token ids: one id per byte, so lengths are easy to reason about).
inline RewardGroup make_group(const std::vector<std::string>& completions, const Json& record = Json::object(),
                              const std::string& reference = "", int64_t max_new_tokens = 0) {
  RewardGroup g;
  g.prompt = "prompt";
  g.reference = reference;
  g.record = record;
  g.max_new_tokens = max_new_tokens;
  for (const std::string& c : completions) {
    RewardSample s;
    s.completion = c;
    s.completion_ids.assign(c.size(), 7);
    s.finish_reason = "stop";
    g.samples.push_back(s);
  }
  return g;
}

// A group whose samples have the given token counts (the text is empty).
inline RewardGroup make_length_group(const std::vector<int64_t>& lengths, int64_t max_new_tokens) {
  RewardGroup g;
  g.max_new_tokens = max_new_tokens;
  for (int64_t n : lengths) {
    RewardSample s;
    s.completion_ids.assign(size_t(n), 1);
    g.samples.push_back(s);
  }
  return g;
}


}  // namespace rlf::test

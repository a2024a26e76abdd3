// Shared by the eval tests.
#pragma once

#include <string>
#include <vector>

#include "rewards/reward.h"

namespace rlf::test {

// A reward that says 1 for everything: a cheating verifier.
class AlwaysOne : public Reward {
 public:
  std::string name() const override { return "always_one"; }
  std::vector<RewardResult> score(const RewardGroup& group) override {
    std::vector<RewardResult> out(group.samples.size());
    for (auto& r : out) r.score = 1.0;
    return out;
  }
};

}  // namespace rlf::test

// Fuzz test (fixed seed) of the external scorer's reply handling: mutated
// reply lines (type swaps, odd values, huge numbers, cuts, wrong lengths,
// nesting, NaN / Infinity written in) go through is_external_reply and parse_external_reply. Each must
// give one result per completion or throw rlf::Error (the whole group then
// missing) — never crash or throw anything else. Run under ASan + UBSan by
// scripts/test.sh (label parser).
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <random>

#include "rewards/external_reward.h"
#include "util/error.h"

namespace rlf {
namespace {

using Rng = std::mt19937_64;
size_t pick(Rng& rng, size_t n) { return n == 0 ? 0 : std::uniform_int_distribution<size_t>(0, n - 1)(rng); }

const char* kOdd[] = {"null", "true", "\"x\"", "[]", "{}", "-1", "1e308", "1e400", "-1e400", "NaN", "18446744073709551616",
                      "[1, 2, 3]", "[[0.5, null], null]", "[\"a\", 1]", "{\"scores\": []}", "0.5", "\"\\ud800\""};

RewardGroup group(size_t n) {
  RewardGroup g;
  g.prompt = "p";
  for (size_t i = 0; i < n; ++i) {
    RewardSample s;
    s.completion = "c" + std::to_string(i);
    s.completion_ids = std::vector<int32_t>(i + 1, 5);
    g.samples.push_back(s);
  }
  return g;
}

TEST(ExternalReplyFuzz, MutatedRepliesParseOrFailCleanly) {
  Rng rng(7);
  const RewardGroup g = group(3);
  const Json valid = Json::parse(R"({"id": 4, "scores": [1.0, null, 0.25], "explanations": ["a", null, "c"],
                                     "reasons": [null, "why", null], "token_rewards": [[0.5], null, [0.1, 0.2, 0.3]]})");
  int parsed = 0;
  for (int i = 0; i < 5000; ++i) {
    Json j = valid;
    const int n = 1 + static_cast<int>(pick(rng, 3));
    for (int k = 0; k < n; ++k) {
      std::vector<Json*> nodes;
      std::vector<Json*> stack = {&j};
      while (!stack.empty()) {
        Json* x = stack.back();
        stack.pop_back();
        nodes.push_back(x);
        if (x->is_structured())
          for (auto& c : *x) stack.push_back(&c);
      }
      Json* target = nodes[pick(rng, nodes.size())];
      const char* odd = kOdd[pick(rng, sizeof(kOdd) / sizeof(kOdd[0]))];
      *target = Json::parse(odd, nullptr, false);
    }
    std::string line = j.is_discarded() ? std::string("{") : j.dump(-1, ' ', false, Json::error_handler_t::replace);
    if (pick(rng, 3) == 0) {  // a number (or anything at a random place) becomes NaN / Infinity, as Python writes them
      static const char* kWords[] = {"NaN", "Infinity", "-Infinity"};
      const size_t at = pick(rng, line.size() + 1);
      size_t end = at;
      while (end < line.size() && (std::isdigit(static_cast<unsigned char>(line[end])) || line[end] == '.')) ++end;
      line = line.substr(0, at) + kWords[pick(rng, 3)] + line.substr(std::max(end, at));
    }
    if (pick(rng, 4) == 0) line.resize(pick(rng, line.size() + 1));  // a cut line
    try {
      (void)is_external_reply(line, 4);
      auto results = parse_external_reply(line, g, 4);
      ASSERT_EQ(results.size(), 3u) << line;
      ++parsed;
    } catch (const Error&) {
    } catch (const std::exception& e) {
      ADD_FAILURE() << "non-rlf exception " << e.what() << " for reply " << line;
    }
  }
  EXPECT_GT(parsed, 500);
}

}  // namespace
}  // namespace rlf

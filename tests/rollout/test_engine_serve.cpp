// RolloutEngine::serve: continuous batching across callers, on the real
// stories260K. Requests that arrive while others decode give what generate()
// gives for the same seeded requests; streamed deltas add up to the final
// sequence; invalid and cancelled requests affect only themselves.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "rollout/engine.h"
#include "rollout/policy.h"
#include "tests/support/test_env.h"

namespace rlf {
namespace {

Policy stories() {
  return load_policy(test::shared_path("models/stories260K/stories260K.bin"), "", LoadOptions{});
}

// Hands out scripted batches, one per poll; closes when they run out and the
// engine waits. Records everything the engine reports.
class ScriptedSource : public RequestSource {
 public:
  std::vector<std::vector<LiveRequest>> batches;
  size_t next = 0;
  int64_t polls = 0;
  std::map<std::pair<int64_t, int64_t>, GeneratedSequence> finished;
  std::map<std::pair<int64_t, int64_t>, std::vector<StreamDelta>> deltas;
  std::map<int64_t, std::string> failed;
  std::set<int64_t> cancel_after_first_delta;
  std::set<int64_t> cancelled_ids;

  bool poll(std::vector<LiveRequest>& out, bool wait) override {
    ++polls;
    if (next < batches.size()) {
      for (auto& r : batches[next]) out.push_back(r);
      ++next;
      return true;
    }
    return !wait;  // nothing left: close once the engine is idle
  }
  void on_delta(const StreamDelta& d) override {
    deltas[{d.id, d.sample}].push_back(d);
    if (cancel_after_first_delta.count(d.id)) cancelled_ids.insert(d.id);
  }
  void on_finished(GeneratedSequence s) override {
    auto key = std::make_pair(s.request_index, s.sample_index);
    EXPECT_FALSE(finished.count(key)) << "sample reported twice";
    finished[key] = std::move(s);
  }
  void on_failed(int64_t id, const std::string& error) override { failed[id] = error; }
  bool cancelled(int64_t id) override { return cancelled_ids.count(id) > 0; }
};

GenerationRequest serve_request(const Policy& p, const std::string& text, int64_t n, double temperature, uint64_t seed,
                          int64_t max_new = 40) {
  GenerationRequest r;
  r.prompt_ids = p.tokenizer->encode(text, true);
  r.n = n;
  r.params.temperature = temperature;
  r.params.max_new_tokens = max_new;
  r.params.seed = seed;
  return r;
}

TEST(EngineServe, RequestsArrivingMidDecodeGetWhatGenerateGives) {
  Policy p = stories();
  std::vector<GenerationRequest> reqs = {
      serve_request(p, "Once upon a time", 3, 1.0, 11),
      serve_request(p, "The dog", 1, 0.0, 12),
      serve_request(p, "Lily and Tom went to the park.", 2, 0.8, 13, 60),
      serve_request(p, "A big", 4, 1.0, 14, 25),
  };
  reqs[2].params.top_k = 20;
  EngineOptions eo;
  eo.eos_token_ids = p.eos_token_ids;
  eo.max_batch_rows = 5;  // fewer rows than samples: groups wait for rows
  RolloutEngine reference(p.model(), p.tokenizer, eo);
  auto want = reference.generate(reqs);

  ScriptedSource src;
  // Request 0 first; 1 and 2 join two polls later (mid-decode); 3 later still.
  src.batches = {{{100, reqs[0]}}, {}, {{101, reqs[1]}, {102, reqs[2]}}, {}, {}, {}, {{103, reqs[3]}}};
  RolloutEngine engine(p.model(), p.tokenizer, eo);
  engine.serve(src);
  EXPECT_TRUE(src.failed.empty());
  ASSERT_EQ(src.finished.size(), want.size());
  for (const auto& w : want) {
    const auto& got = src.finished.at({100 + w.request_index, w.sample_index});
    EXPECT_EQ(got.request_index, 100 + w.request_index);
    EXPECT_EQ(got.prompt_ids, w.prompt_ids);
    EXPECT_EQ(got.completion_ids, w.completion_ids) << "request " << w.request_index << " sample " << w.sample_index;
    EXPECT_EQ(got.text, w.text);
    ASSERT_EQ(got.logprobs.size(), w.logprobs.size());
    for (size_t i = 0; i < w.logprobs.size(); ++i) EXPECT_NEAR(got.logprobs[i], w.logprobs[i], 1e-4);
  }
  EXPECT_GT(src.polls, 7);  // it polled between decode steps, not once per batch
}

TEST(EngineServe, StreamedDeltasAddUpToTheFinalSequenceAndHoldBackStopStrings) {
  Policy p = stories();
  GenerationRequest r = serve_request(p, "Once upon a time", 2, 1.0, 5, 80);
  r.params.stop_strings = {"park", ". She"};
  r.top_logprobs = 3;
  ScriptedSource src;
  src.batches = {{{7, r}}};
  EngineOptions eo;
  eo.eos_token_ids = p.eos_token_ids;
  RolloutEngine engine(p.model(), p.tokenizer, eo);
  engine.serve(src);
  ASSERT_EQ(src.finished.size(), 2u);
  for (int64_t s = 0; s < 2; ++s) {
    const auto& fin = src.finished.at({7, s});
    const auto& ds = src.deltas[{7, s}];
    ASSERT_FALSE(ds.empty());
    std::vector<int32_t> ids;
    std::string text;
    for (const auto& d : ds) {
      EXPECT_EQ(d.token_begin, static_cast<int64_t>(ids.size()));
      EXPECT_EQ(d.text_begin, static_cast<int64_t>(text.size()));
      EXPECT_EQ(d.logprobs.size(), d.token_ids.size());
      EXPECT_EQ(d.top_logprobs.size(), d.token_ids.size());
      ids.insert(ids.end(), d.token_ids.begin(), d.token_ids.end());
      text += d.text;
    }
    // Deltas are a prefix of the final sequence; the stop string never leaks.
    ASSERT_LE(ids.size(), fin.completion_ids.size());
    EXPECT_TRUE(std::equal(ids.begin(), ids.end(), fin.completion_ids.begin()));
    EXPECT_EQ(fin.text.substr(0, text.size()), text);
    for (const auto& stop : r.params.stop_strings) EXPECT_EQ(text.find(stop), std::string::npos);
    // Top log-probs: sorted, and the sampled token's log-prob is among them or below the last.
    ASSERT_EQ(fin.top_logprobs.size(), fin.completion_ids.size());
    for (size_t i = 0; i < fin.completion_ids.size(); ++i) {
      const auto& top = fin.top_logprobs[i];
      ASSERT_EQ(top.size(), 3u);
      EXPECT_GE(top[0].logprob, top[1].logprob);
      EXPECT_GE(top[1].logprob, top[2].logprob);
      bool listed = false;
      for (const auto& t : top)
        if (t.id == fin.completion_ids[i]) {
          listed = true;
          EXPECT_NEAR(t.logprob, fin.logprobs[i], 1e-5);
        }
      if (!listed) {
        EXPECT_LE(fin.logprobs[i], top[2].logprob + 1e-5);
      }
    }
  }
}

TEST(EngineServe, InvalidAndCancelledRequestsAffectOnlyThemselves) {
  Policy p = stories();
  GenerationRequest ok = serve_request(p, "Once upon a time", 2, 1.0, 1, 50);
  GenerationRequest empty = ok;
  empty.prompt_ids.clear();
  GenerationRequest outside = ok;
  outside.prompt_ids.push_back(100000);
  GenerationRequest cancelled = serve_request(p, "The cat", 3, 1.0, 2, 50);
  ScriptedSource src;
  src.batches = {{{1, ok}, {2, empty}, {3, outside}, {4, cancelled}}, {{1, ok}}};  // id 1 again: still in use
  src.cancel_after_first_delta = {4};
  EngineOptions eo;
  eo.eos_token_ids = p.eos_token_ids;
  RolloutEngine engine(p.model(), p.tokenizer, eo);
  engine.serve(src);
  EXPECT_NE(src.failed.at(2).find("the prompt is empty"), std::string::npos) << src.failed.at(2);
  EXPECT_NE(src.failed.at(3).find("outside the vocabulary"), std::string::npos) << src.failed.at(3);
  EXPECT_NE(src.failed.at(1).find("already in use"), std::string::npos) << src.failed.at(1);
  EXPECT_EQ(src.finished.count({1, 0}) + src.finished.count({1, 1}), 2u);
  for (int64_t s = 0; s < 3; ++s) EXPECT_EQ(src.finished.count({4, s}), 0u) << "a cancelled sample was reported";
  // The same engine serves again after all that (state was cleaned up).
  ScriptedSource again;
  again.batches = {{{4, cancelled}}};
  engine.serve(again);
  EXPECT_EQ(again.finished.size(), 3u);
  EXPECT_TRUE(again.failed.empty());
}

}  // namespace
}  // namespace rlf

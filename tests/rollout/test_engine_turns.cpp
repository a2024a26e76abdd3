// Conversations in the rollout engine: a row pauses at the end of a turn,
// gets observation tokens appended and continues from its cached state.
//  - the history is never prefilled again (prefill stats count exactly the
//    prompt once per group plus each continuation);
//  - the sequence is exactly the sampled ids and the appended ids;
//  - the per-token log-probs equal a full forward over the whole sequence
//    (what the trainer recomputes), on the fast path and the module path;
//  - conversations at different turns share the batch and give what each
//    gives alone;
//  - an append that does not fit ends the row, flagged.
#include <gtest/gtest.h>

#include <map>

#include "model/loader.h"
#include "rollout/engine.h"
#include "tests/support/test_env.h"

namespace rlf {
namespace {

CausalLM turns_model(uint64_t seed = 5) {
  ModelConfig c = ModelConfig::preset("stories260K");
  c.num_hidden_layers = 2;
  return make_random_model(c, seed, torch::kFloat32, torch::kCPU);
}

std::vector<int32_t> ids(int64_t len, int32_t start) {
  std::vector<int32_t> p;
  for (int64_t i = 0; i < len; ++i) p.push_back(static_cast<int32_t>((start + 53 * i) % 480 + 10));
  return p;
}

// Appends `obs_len` tokens after each turn until `turns` turns were taken.
class FixedTurns : public TurnHandler {
 public:
  FixedTurns(int64_t turns, int64_t obs_len) : turns_(turns), obs_len_(obs_len) {}
  TurnContinuation on_turn_end(const TurnEnd& te) override {
    calls.push_back(te);
    TurnContinuation c;
    if (te.turn + 1 >= turns_) return c;
    c.done = false;
    c.append_ids = ids(obs_len_ + te.turn, static_cast<int32_t>(100 + 7 * te.turn + te.sample_index));
    appended[{te.request_index, te.sample_index}].push_back(c.append_ids);
    return c;
  }
  std::vector<TurnEnd> calls;
  std::map<std::pair<int64_t, int64_t>, std::vector<std::vector<int32_t>>> appended;

 private:
  int64_t turns_, obs_len_;
};

GenerationRequest turns_request(std::vector<int32_t> prompt, int64_t n, uint64_t seed, int64_t max_new, int64_t budget) {
  GenerationRequest r;
  r.prompt_ids = std::move(prompt);
  r.n = n;
  r.params.temperature = 1.0;
  r.params.max_new_tokens = max_new;
  r.params.seed = seed;
  r.max_total_tokens = budget;
  return r;
}

// Log-probs of every token of `seq` (prompt + completion) from one full forward.
std::vector<float> full_forward_logprobs(CausalLM& model, const std::vector<int32_t>& seq) {
  torch::NoGradGuard ng;
  std::vector<int64_t> v(seq.begin(), seq.end());
  const int64_t L = static_cast<int64_t>(v.size());
  auto input = torch::tensor(v, torch::kInt64).view({1, L});
  auto pos = torch::arange(L - 1, torch::kInt64).view({1, L - 1});
  auto hidden = model->forward_hidden(input.narrow(1, 0, L - 1), pos);
  auto lp = model->token_logprobs(hidden, input.narrow(1, 1, L - 1)).contiguous();
  std::vector<float> out(static_cast<size_t>(L), 0.0f);
  for (int64_t t = 1; t < L; ++t) out[static_cast<size_t>(t)] = lp[0][t - 1].item<float>();
  return out;
}

// Conversations through the GPU's sampling path (run on the CPU): appended
// tokens are pushed as given, the turns' draws equal the CPU scan's.
TEST(EngineTurns, TensorSamplingKeepsConversationsExact) {
  auto model = turns_model();
  EngineOptions tensor;
  tensor.tensor_sampling = true;
  FixedTurns h1(3, 4), h2(3, 4);
  auto a = RolloutEngine(model, nullptr, {}).generate({turns_request(ids(9, 1), 3, 7, 5, 60)}, &h1);
  auto b = RolloutEngine(model, nullptr, tensor).generate({turns_request(ids(9, 1), 3, 7, 5, 60)}, &h2);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].completion_ids, b[i].completion_ids);
    ASSERT_EQ(a[i].logprobs.size(), b[i].logprobs.size());
    for (size_t t = 0; t < a[i].logprobs.size(); ++t) EXPECT_NEAR(a[i].logprobs[t], b[i].logprobs[t], 1e-5);
    EXPECT_EQ(a[i].segments.size(), 5u);
  }
}

TEST(EngineTurns, ContinuesFromTheCacheAndKeepsTheSequenceExact) {
  for (bool fast : {true, false}) {
    SCOPED_TRACE(fast ? "fast path" : "module path");
    auto model = turns_model();
    model->set_fast_cpu_path(fast);
    RolloutEngine engine(model, nullptr, {});
    FixedTurns handler(3, 4);
    const std::vector<int32_t> prompt = ids(9, 1);
    auto out = engine.generate({turns_request(prompt, 3, 7, 5, 60)}, &handler);
    ASSERT_EQ(out.size(), 3u);

    // The prompt is prefilled once for the group; after that every token is run
    // through the model once (all but each sequence's last): the history is never
    // fed again, whatever the number of turns.
    EXPECT_EQ(engine.stats().n_prefill_tokens, 9);
    int64_t fed = 9, appended = 0;
    for (const auto& s : out) {
      fed += static_cast<int64_t>(s.completion_ids.size()) - 1;
      for (const auto& seg : s.segments)
        if (!seg.sampled) appended += seg.end - seg.begin;
    }
    EXPECT_EQ(engine.stats().n_fed_tokens, fed);
    EXPECT_EQ(engine.stats().n_appended_tokens, appended);

    for (const auto& s : out) {
      // Segments: turn, observation, turn, observation, turn — covering the completion in order.
      ASSERT_EQ(s.segments.size(), 5u);
      int64_t at = 0;
      size_t k = 0;
      for (size_t j = 0; j < s.segments.size(); ++j) {
        const auto& seg = s.segments[j];
        EXPECT_EQ(seg.begin, at);
        EXPECT_EQ(seg.sampled, j % 2 == 0);
        if (seg.sampled) {
          EXPECT_GE(seg.end - seg.begin, 1);
          EXPECT_LE(seg.end - seg.begin, 5);
        } else {
          // Exactly the appended ids, with log-prob 0.
          const auto& app = handler.appended.at({s.request_index, s.sample_index}).at(k++);
          EXPECT_EQ(std::vector<int32_t>(s.completion_ids.begin() + seg.begin, s.completion_ids.begin() + seg.end), app);
          for (int64_t t = seg.begin; t < seg.end; ++t) EXPECT_EQ(s.logprobs[static_cast<size_t>(t)], 0.0f);
        }
        at = seg.end;
      }
      EXPECT_EQ(at, static_cast<int64_t>(s.completion_ids.size()));

      // The rollout's log-probs equal a full forward over the whole conversation.
      std::vector<int32_t> seq = prompt;
      seq.insert(seq.end(), s.completion_ids.begin(), s.completion_ids.end());
      auto full = full_forward_logprobs(model, seq);
      for (const auto& seg : s.segments) {
        if (!seg.sampled) continue;
        for (int64_t t = seg.begin; t < seg.end; ++t)
          EXPECT_NEAR(s.logprobs[static_cast<size_t>(t)], full[prompt.size() + static_cast<size_t>(t)], 2e-5)
              << "token " << t;
      }
    }
    EXPECT_EQ(handler.calls.size(), 9u);  // three turns each
  }
}

TEST(EngineTurns, ConversationsAtDifferentTurnsShareTheBatchAndMatchEachAlone) {
  auto model = turns_model(9);
  std::vector<GenerationRequest> reqs = {turns_request(ids(4, 1), 2, 11, 6, 50), turns_request(ids(13, 2), 1, 12, 3, 40),
                                         turns_request(ids(7, 3), 3, 13, 8, 70)};
  RolloutEngine together(model, nullptr, {});
  FixedTurns h_all(4, 3);
  auto all = together.generate(reqs, &h_all);
  ASSERT_EQ(all.size(), 6u);
  size_t k = 0;
  for (size_t r = 0; r < reqs.size(); ++r) {
    RolloutEngine alone(model, nullptr, {});
    FixedTurns h_one(4, 3);
    auto one = alone.generate({reqs[r]}, &h_one);
    ASSERT_EQ(static_cast<int64_t>(one.size()), reqs[r].n);
    for (const auto& s : one) {
      const auto& t = all[k++];
      EXPECT_EQ(t.sample_index, s.sample_index);
      EXPECT_EQ(t.completion_ids, s.completion_ids) << "request " << r << " sample " << s.sample_index;
      ASSERT_EQ(t.logprobs.size(), s.logprobs.size());
      for (size_t i = 0; i < s.logprobs.size(); ++i) EXPECT_NEAR(t.logprobs[i], s.logprobs[i], 1e-4);
    }
  }
}

// Appends more than the room left on the second turn.
class Greedy : public TurnHandler {
 public:
  TurnContinuation on_turn_end(const TurnEnd& te) override {
    rooms.push_back(te.room);
    TurnContinuation c;
    c.done = false;
    c.append_ids = ids(te.turn == 0 ? 2 : te.room, 3);  // the second one leaves no token for the policy
    return c;
  }
  std::vector<int64_t> rooms;
};

TEST(EngineTurns, AnAppendThatDoesNotFitEndsTheRowFlagged) {
  auto model = turns_model();
  RolloutEngine engine(model, nullptr, {});
  Greedy handler;
  auto out = engine.generate({turns_request(ids(5, 4), 1, 3, 4, 12)}, &handler);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TRUE(out[0].overflowed);
  ASSERT_EQ(handler.rooms.size(), 2u);
  EXPECT_EQ(handler.rooms[0], 12 - 4);                 // after a 4-token first turn
  EXPECT_EQ(out[0].completion_ids.size(), 4u + 2u + 4u - 0u) << "turn, observation, turn; nothing more";
}

TEST(EngineTurns, WithoutAHandlerEverySequenceIsOneTurn) {
  auto model = turns_model();
  RolloutEngine engine(model, nullptr, {});
  auto out = engine.generate({turns_request(ids(5, 4), 2, 3, 6, 0)});
  for (const auto& s : out) {
    ASSERT_EQ(s.segments.size(), 1u);
    EXPECT_TRUE(s.segments[0].sampled);
    EXPECT_EQ(s.segments[0].end, static_cast<int64_t>(s.completion_ids.size()));
    EXPECT_FALSE(s.overflowed);
  }
}

}  // namespace
}  // namespace rlf

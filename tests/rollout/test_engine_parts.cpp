// The rollout engine's parts on their own (rollout/engine.h lists them),
// each against what its header promises:
//  - the scheduler admits as many of a group's samples as there are free
//    rows, and compaction keeps the running rows contiguous, moving the last
//    row into a finished row's slot and keeping the finished result;
//  - the turn rules end a turn at EOS (unless ignored), a stop id, the turn's
//    limit; a handler's tokens are queued, an append that does not fit ends
//    the sequence flagged, an id outside the vocabulary is a clear error;
//  - the sampler dispatch pushes a queued appended token without drawing,
//    draws the same tokens on the host and tensor paths, and pushes each
//    drawn token with its temperature-1 log-prob;
//  - the model runner's batched prefill leaves each prompt's logits and
//    keys/values where one prompt at a time leaves them.
#include <gtest/gtest.h>

#include <cmath>

#include "model/kv_cache.h"
#include "model/transformer.h"
#include "model/cpu_kernels.h"
#include "model/loader.h"
#include "rollout/batch_sampler.h"
#include "rollout/decoding_weights.h"
#include "rollout/model_runner.h"
#include "rollout/scheduler.h"
#include "rollout/turns.h"
#include "util/error.h"

namespace rlf {
namespace {

using rollout::Scheduler;
using rollout::Sequence;

GenerationRequest part_request(int64_t prompt_len, int64_t n, uint64_t seed) {
  GenerationRequest r;
  for (int64_t i = 0; i < prompt_len; ++i) r.prompt_ids.push_back(static_cast<int32_t>(10 + i));
  r.n = n;
  r.params.max_new_tokens = 4;
  r.params.seed = seed;
  return r;
}

TEST(EngineParts, SchedulerSplitsAGroupAndKeepsRunningRowsContiguous) {
  ModelConfig c = ModelConfig::preset("stories260K");
  c.num_hidden_layers = 1;
  KVCache cache(c, /*n_rows=*/3, /*max_len=*/16, torch::kFloat32, torch::kCPU);
  Scheduler sched(cache);
  const GenerationRequest req = part_request(2, 5, 1);
  sched.add(/*request=*/7, &req);
  ASSERT_FALSE(sched.idle());

  auto a = sched.next_admission();
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->row0, 0);
  EXPECT_EQ(a->n, 3);  // three free rows of the group's five samples
  EXPECT_EQ(a->group.request, 7);
  for (int64_t j = 0; j < a->n; ++j) {
    sched.running().push_back(Sequence::start(7, a->group.first + j, req, 64, nullptr));
    sched.running().back().push_sampled(20 + static_cast<int32_t>(j), -1.0f);
  }
  sched.admitted(a->n);
  EXPECT_FALSE(sched.next_admission().has_value());  // no free row

  sched.running()[0].finished = true;
  sched.compact();
  ASSERT_EQ(sched.running().size(), 2u);
  EXPECT_EQ(sched.running()[0].sample, 2);  // the last row moved into the freed slot
  EXPECT_EQ(sched.running()[1].sample, 1);
  auto done = sched.take_finished();
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].request_index, 7);
  EXPECT_EQ(done[0].sample_index, 0);
  EXPECT_EQ(done[0].prompt_ids, req.prompt_ids);
  EXPECT_EQ(done[0].completion_ids, std::vector<int32_t>{20});
  EXPECT_TRUE(sched.take_finished().empty());

  a = sched.next_admission();
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->row0, 2);
  EXPECT_EQ(a->n, 1);
  EXPECT_EQ(a->group.first, 3);
  sched.clear();
  EXPECT_TRUE(sched.idle());
}

// Appends `append` after the first turn; ends the sequence after the second.
class AppendOnce : public TurnHandler {
 public:
  explicit AppendOnce(std::vector<int32_t> append) : append_(std::move(append)) {}
  TurnContinuation on_turn_end(const TurnEnd& te) override {
    seen.push_back(te);
    TurnContinuation c;
    if (te.turn > 0) return c;
    c.done = false;
    c.append_ids = append_;
    return c;
  }
  std::vector<TurnEnd> seen;

 private:
  std::vector<int32_t> append_;
};

TEST(EngineParts, TurnRulesEndTurnsAndQueueTheHandlersTokens) {
  const std::vector<int32_t> eos = {2};
  const rollout::TurnRules rules{&eos, nullptr, /*vocab_size=*/100};
  GenerationRequest req = part_request(3, 1, 1);
  req.params.stop_token_ids = {5};
  req.max_total_tokens = 10;

  Sequence s = Sequence::start(0, 0, req, 64, nullptr);
  s.push_sampled(7, -0.5f);
  EXPECT_FALSE(rules.turn_over(s));
  s.push_sampled(2, -0.5f);  // EOS
  ASSERT_TRUE(rules.turn_over(s));
  EXPECT_EQ(s.reason, FinishReason::Stop);
  EXPECT_EQ(s.stop, "eos");

  AppendOnce handler({40, 41});
  EXPECT_EQ(rules.end_turn(s, &handler), 2);
  EXPECT_FALSE(s.finished);
  ASSERT_EQ(handler.seen.size(), 1u);
  EXPECT_EQ(handler.seen[0].room, 10 + 3 - 5);  // the row's limit minus its length
  ASSERT_EQ(s.segments.size(), 2u);             // the turn, then the appended stretch
  EXPECT_TRUE(s.segments[0].sampled);
  EXPECT_FALSE(s.segments[1].sampled);
  EXPECT_EQ(s.segments[1].begin, 2);
  EXPECT_EQ(s.segments[1].end, 4);
  EXPECT_EQ(s.turn_begin, 4);
  ASSERT_TRUE(s.push_forced());
  ASSERT_TRUE(s.push_forced());
  EXPECT_FALSE(s.push_forced());
  EXPECT_EQ(s.completion, (std::vector<int32_t>{7, 2, 40, 41}));
  EXPECT_EQ(s.logprobs[2], 0.0f);

  s.push_sampled(5, -0.5f);  // a stop id
  ASSERT_TRUE(rules.turn_over(s));
  EXPECT_EQ(s.stop, "id:5");
  EXPECT_EQ(rules.end_turn(s, &handler), 0);
  EXPECT_TRUE(s.finished);
  EXPECT_FALSE(s.overflowed);

  // The turn's own limit, with EOS ignored.
  GenerationRequest ignoring = part_request(3, 1, 1);
  ignoring.params.ignore_eos = true;
  ignoring.params.max_new_tokens = 2;
  Sequence t = Sequence::start(0, 0, ignoring, 64, nullptr);
  t.push_sampled(2, -0.5f);
  EXPECT_FALSE(rules.turn_over(t));
  t.push_sampled(2, -0.5f);
  ASSERT_TRUE(rules.turn_over(t));
  EXPECT_EQ(t.reason, FinishReason::Length);
  EXPECT_EQ(t.stop, "");

  // An append that leaves no token for the policy ends the sequence, flagged.
  GenerationRequest tight = part_request(3, 1, 1);
  tight.max_total_tokens = 3;
  Sequence u = Sequence::start(0, 0, tight, 64, nullptr);
  u.push_sampled(2, -0.5f);
  ASSERT_TRUE(rules.turn_over(u));
  AppendOnce too_long({40, 41});
  EXPECT_EQ(rules.end_turn(u, &too_long), 0);
  EXPECT_TRUE(u.finished);
  EXPECT_TRUE(u.overflowed);

  Sequence v = Sequence::start(0, 0, req, 64, nullptr);
  v.push_sampled(2, -0.5f);
  ASSERT_TRUE(rules.turn_over(v));
  AppendOnce outside({100});
  try {
    rules.end_turn(v, &outside);
    FAIL() << "an appended id outside the vocabulary must be an error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "appended token id 100 is outside the vocabulary (100)");
  }
}

// Rows: plain temperature, greedy, top-k, min-p, and one with an appended token queued.
std::vector<GenerationRequest> dispatch_requests() {
  std::vector<GenerationRequest> reqs(5, part_request(2, 1, 0));
  for (size_t i = 0; i < reqs.size(); ++i) reqs[i].params.seed = 100 + i;
  reqs[0].params.temperature = 0.7;
  reqs[1].params.temperature = 0.0;
  reqs[2].params.top_k = 5;
  reqs[3].params.min_p = 0.2;
  reqs[4].top_logprobs = 2;
  return reqs;
}

std::vector<Sequence> dispatch_rows(const std::vector<GenerationRequest>& reqs) {
  std::vector<Sequence> rows;
  for (size_t i = 0; i < reqs.size(); ++i) rows.push_back(Sequence::start(0, static_cast<int64_t>(i), reqs[i], 64, nullptr));
  rows[4].forced = {33};
  return rows;
}

TEST(EngineParts, SamplerDispatchDrawsTheSameOnBothPathsAndSkipsForcedRows) {
  const auto reqs = dispatch_requests();
  torch::manual_seed(3);
  const int64_t V = 64;
  const auto logits = (torch::randn({5, V}, torch::kFloat32) * 2).contiguous();
  const auto logp = torch::log_softmax(logits.to(torch::kFloat64), -1);
  for (int draw = 0; draw < 8; ++draw) {
    auto host = dispatch_rows(reqs);
    auto tensor = dispatch_rows(reqs);
    for (int k = 0; k < draw; ++k) host[0].rng.next(), tensor[0].rng.next();  // other draws of the plain row
    rollout::sample_next_tokens(logits, host, 0, /*tensor_sampling=*/false);
    rollout::sample_next_tokens(logits, tensor, 0, /*tensor_sampling=*/true);
    for (int64_t i = 0; i < 5; ++i) {
      ASSERT_EQ(host[i].completion.size(), 1u) << "row " << i;
      EXPECT_EQ(host[i].completion, tensor[i].completion) << "row " << i;
      EXPECT_NEAR(host[i].logprobs[0], tensor[i].logprobs[0], 1e-5) << "row " << i;
    }
    for (int64_t i = 0; i < 4; ++i) {
      EXPECT_FALSE(host[i].just_forced);
      const double expected = logp[i][host[i].completion[0]].item<double>();
      EXPECT_NEAR(host[i].logprobs[0], expected, 1e-5) << "row " << i;
    }
    EXPECT_EQ(host[1].completion[0], logits[1].argmax().item<int64_t>());  // greedy
    // The forced row pushed its token as given and drew nothing from its generator.
    EXPECT_TRUE(host[4].just_forced);
    EXPECT_EQ(host[4].completion, std::vector<int32_t>{33});
    EXPECT_EQ(host[4].logprobs[0], 0.0f);
    EXPECT_EQ(host[4].top.size(), 1u);  // its empty top-log-probs entry
    Rng fresh = Sequence::start(0, 4, reqs[4], 64, nullptr).rng;
    EXPECT_EQ(host[4].rng.next(), fresh.next());
  }
}

TEST(EngineParts, SamplerDispatchNamesTheSequenceWithNonFiniteLogits) {
  const auto reqs = dispatch_requests();
  auto rows = dispatch_rows(reqs);
  auto logits = torch::zeros({5, 16}, torch::kFloat32);
  logits[2][3] = std::nanf("");
  try {
    rollout::sample_next_tokens(logits, rows, 0, false);
    FAIL() << "non-finite logits must be an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("non-finite logits (NaN or Inf) for sequence 0/2"), std::string::npos)
        << e.what();
  }
}

// Prompts of different lengths (groups shared and copied, single rows),
// more than one forward's kPrefillBatchTokens, prefilled together and one at a
// time: the same logits, the same keys and values where each row reads them,
// and the same next decode step; on the fp32 kernels (with and without packed
// weights) and on LibTorch's module path.
TEST(EngineParts, BatchedPrefillLeavesWhatOnePromptAtATimeLeaves) {
  ModelConfig c = ModelConfig::preset("stories260K");
  c.num_hidden_layers = 2;
  c.max_position_embeddings = 1024;
  std::vector<std::vector<int32_t>> ids;
  std::vector<rollout::PromptPrefill> prompts;
  const int64_t lengths[] = {7, 1, 30, 12, 300, 5, 900, 64, 3};  // 900 and 300 overflow one batch
  int64_t row = 0;
  for (size_t i = 0; i < std::size(lengths); ++i) {
    ids.emplace_back();
    for (int64_t t = 0; t < lengths[i]; ++t) ids.back().push_back(static_cast<int32_t>((31 * i + 7 * t) % 500 + 3));
  }
  for (size_t i = 0; i < ids.size(); ++i) {
    const int64_t n = i % 3 == 0 ? 3 : 1;
    prompts.push_back({&ids[i], row, n, i % 2 == 0});
    row += n;
  }
  for (const char* path : {"panels", "kernels", "module"}) {
    auto model = make_random_model(c, 5, torch::kFloat32, torch::kCPU);
    model->set_fast_cpu_path(std::string(path) != "module");
    model->set_pack_weights(std::string(path) == "panels");
    double pack_s = 0;
    const rollout::DecodingWeights packed(*model, pack_s);
    // Bit for bit where the panels are packed (a vector build; a portable one decodes without them).
    const bool exact = std::string(path) == "panels" && cpu::vector_kernels();
    KVCache together(c, row, 1000, torch::kFloat32, torch::kCPU), alone(c, row, 1000, torch::kFloat32, torch::kCPU);
    const torch::Tensor batched = rollout::prefill_prompts(*model, together, prompts);
    ASSERT_EQ(batched.sizes(), (std::vector<int64_t>{static_cast<int64_t>(prompts.size()), c.vocab_size}));
    for (size_t i = 0; i < prompts.size(); ++i) {
      const auto& p = prompts[i];
      const torch::Tensor one = rollout::prefill_prompt(*model, alone, *p.prompt_ids, p.row0, p.n, p.share);
      EXPECT_TRUE(torch::allclose(batched[static_cast<int64_t>(i)], one[0], 1e-5, 1e-5)) << path << " prompt " << i;
      if (exact) EXPECT_TRUE(torch::equal(batched[static_cast<int64_t>(i)], one[0])) << i;
      for (int64_t j = 0; j < p.n; ++j) {
        const int64_t r = p.row0 + j;
        EXPECT_EQ(together.prefix_len(r), alone.prefix_len(r)) << path << " row " << r;
        const KVCache* tp = together.prefix(r);
        const KVCache* ap = alone.prefix(r);
        for (int64_t l = 0; l < c.num_hidden_layers; ++l) {
          const int64_t P = static_cast<int64_t>(p.prompt_ids->size());
          const torch::Tensor tk = tp ? tp->keys(l)[0] : together.keys(l)[r].narrow(1, 0, P);
          const torch::Tensor ak = ap ? ap->keys(l)[0] : alone.keys(l)[r].narrow(1, 0, P);
          const torch::Tensor tv = tp ? tp->values(l)[0] : together.values(l)[r].narrow(1, 0, P);
          const torch::Tensor av = ap ? ap->values(l)[0] : alone.values(l)[r].narrow(1, 0, P);
          EXPECT_TRUE(torch::allclose(tk, ak, 1e-5, 1e-5)) << path << " row " << r << " layer " << l;
          EXPECT_TRUE(torch::allclose(tv, av, 1e-5, 1e-5)) << path << " row " << r << " layer " << l;
        }
      }
    }
    // One decode step on every row from each cache: the same logits.
    std::vector<rollout::Sequence> rows;
    std::vector<GenerationRequest> reqs(static_cast<size_t>(row));
    for (size_t i = 0, r = 0; i < prompts.size(); ++i)
      for (int64_t j = 0; j < prompts[i].n; ++j, ++r) {
        reqs[r].prompt_ids = *prompts[i].prompt_ids;
        reqs[r].params.max_new_tokens = 4;
        reqs[r].params.seed = 1;
        rows.push_back(Sequence::start(0, j, reqs[r], 1000, nullptr));
        rows.back().completion.push_back(static_cast<int32_t>(40 + r));
      }
    const torch::Tensor a = rollout::decode_logits(*model, together, rows);
    const torch::Tensor b = rollout::decode_logits(*model, alone, rows);
    EXPECT_TRUE(torch::allclose(a, b, 1e-5, 1e-5)) << path << ": " << (a - b).abs().max().item<float>();
    if (exact) EXPECT_TRUE(torch::equal(a, b)) << "the panel kernel's sums do not depend on N";
  }
}

}  // namespace
}  // namespace rlf

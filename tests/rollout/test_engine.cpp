// The rollout engine: batched KV-cache generation must give exactly what
// one-at-a-time generation gives, share a group's prompt prefill, honour every
// sampling parameter, be reproducible by seed, and return the log-probs the
// trainer's forward computes.
#include <gtest/gtest.h>

#include <limits>
#include <set>

#include "model/loader.h"
#include "rollout/engine.h"
#include "tests/support/test_env.h"

namespace rlf {
namespace {

CausalLM tiny_model(uint64_t seed = 11) {
  ModelConfig c = ModelConfig::preset("stories260K");
  c.num_hidden_layers = 2;
  return make_random_model(c, seed, torch::kFloat32, torch::kCPU);
}

std::vector<int32_t> prompt(int64_t len, int32_t start) {
  std::vector<int32_t> p;
  for (int64_t i = 0; i < len; ++i) p.push_back(static_cast<int32_t>((start + 37 * i) % 500 + 3));
  return p;
}

GenerationRequest request(std::vector<int32_t> ids, double temperature, int64_t max_new, uint64_t seed, int64_t n = 1) {
  GenerationRequest r;
  r.prompt_ids = std::move(ids);
  r.n = n;
  r.params.temperature = temperature;
  r.params.max_new_tokens = max_new;
  r.params.seed = seed;
  return r;
}

TEST(Engine, RaggedBatchEqualsEachAlone) {
  auto model = tiny_model();
  std::vector<GenerationRequest> reqs = {request(prompt(3, 1), 0.0, 12, 1), request(prompt(17, 2), 0.0, 9, 2),
                                         request(prompt(8, 3), 0.8, 14, 3), request(prompt(1, 4), 1.0, 10, 4)};
  RolloutEngine batched(model, nullptr, {});
  auto together = batched.generate(reqs);
  ASSERT_EQ(together.size(), reqs.size());
  for (size_t i = 0; i < reqs.size(); ++i) {
    RolloutEngine alone(model, nullptr, {});
    auto one = alone.generate({reqs[i]});
    ASSERT_EQ(one.size(), 1u);
    EXPECT_EQ(together[i].completion_ids, one[0].completion_ids) << "request " << i;
    ASSERT_EQ(together[i].logprobs.size(), one[0].logprobs.size());
    for (size_t t = 0; t < one[0].logprobs.size(); ++t) EXPECT_NEAR(together[i].logprobs[t], one[0].logprobs[t], 1e-4);
  }
}

// The GPU's sampling path (the CDF inverted with tensor ops, only ids and
// log-probs copied back) run on the CPU: the same row draws give the same
// tokens and log-probs as the CPU scan, for plain, greedy and filtered rows
// in one batch, and with appended (forced) tokens in multi-turn rows.
TEST(Engine, TensorSamplingDrawsWhatTheCpuScanDraws) {
  auto model = tiny_model();
  std::vector<GenerationRequest> reqs = {request(prompt(3, 1), 1.0, 20, 1, 3), request(prompt(9, 2), 0.0, 12, 2),
                                         request(prompt(5, 3), 0.7, 16, 3, 2), request(prompt(4, 4), 1.0, 18, 4)};
  reqs[3].params.top_k = 5;
  reqs[3].params.top_p = 0.9;
  EngineOptions tensor;
  tensor.tensor_sampling = true;
  auto a = RolloutEngine(model, nullptr, {}).generate(reqs);
  auto b = RolloutEngine(model, nullptr, tensor).generate(reqs);
  ASSERT_EQ(a.size(), b.size());
  int64_t tokens = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].completion_ids, b[i].completion_ids) << "sequence " << i;
    ASSERT_EQ(a[i].logprobs.size(), b[i].logprobs.size());
    for (size_t t = 0; t < a[i].logprobs.size(); ++t) EXPECT_NEAR(a[i].logprobs[t], b[i].logprobs[t], 1e-5);
    tokens += static_cast<int64_t>(a[i].completion_ids.size());
  }
  EXPECT_GT(tokens, 100);
}

TEST(Engine, SmallBatchRowsGiveTheSameResultAsOneBigBatch) {
  auto model = tiny_model();
  std::vector<GenerationRequest> reqs;
  for (int i = 0; i < 5; ++i) reqs.push_back(request(prompt(2 + 3 * i, i), 1.0, 6 + i, 100 + i, 3));
  RolloutEngine big(model, nullptr, {});
  EngineOptions small_opts;
  small_opts.max_batch_rows = 2;  // forces splitting groups and continuous refill
  RolloutEngine small(model, nullptr, small_opts);
  auto a = big.generate(reqs), b = small.generate(reqs);
  ASSERT_EQ(a.size(), 15u);
  ASSERT_EQ(b.size(), 15u);
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].request_index, b[i].request_index);
    EXPECT_EQ(a[i].sample_index, b[i].sample_index);
    EXPECT_EQ(a[i].completion_ids, b[i].completion_ids) << i;
  }
}

TEST(Engine, GroupSharesOnePrefillAndSamplesDiffer) {
  auto model = tiny_model();
  RolloutEngine engine(model, nullptr, {});
  auto out = engine.generate({request(prompt(20, 5), 1.0, 8, 42, 6)});
  EXPECT_EQ(engine.stats().n_prefill_tokens, 20);  // the prompt was run once, not six times
  ASSERT_EQ(out.size(), 6u);
  std::set<std::vector<int32_t>> distinct;
  for (const auto& s : out) distinct.insert(s.completion_ids);
  EXPECT_GT(distinct.size(), 1u);
}

// Groups read one copy of their prompt's keys and values (a shared prefix)
// instead of one per sample: the tokens and log-probs are the same, bit for
// bit, as with each row holding a copy, on the fp32 CPU kernels and on
// LibTorch's path, with ragged prompts, single samples beside groups, and
// groups split over a small batch (rows compacted while others decode).
TEST(Engine, SharedPromptsSampleExactlyWhatCopiedPromptsSample) {
  for (bool fast : {true, false}) {
    auto model = tiny_model();
    model->set_fast_cpu_path(fast);
    std::vector<GenerationRequest> reqs = {request(prompt(30, 1), 1.0, 9, 7, 4), request(prompt(7, 2), 0.9, 12, 8),
                                           request(prompt(12, 3), 1.2, 6, 9, 3), request(prompt(1, 4), 1.0, 11, 10, 2)};
    reqs[0].params.stop_token_ids = {5, 17, 33};  // rows of a group finish at different steps
    for (int64_t rows : {64, 3}) {
      EngineOptions shared_opts, copied_opts;
      shared_opts.max_batch_rows = copied_opts.max_batch_rows = rows;
      copied_opts.share_prompt_cache = false;
      RolloutEngine shared(model, nullptr, shared_opts), copied(model, nullptr, copied_opts);
      auto a = shared.generate(reqs), b = copied.generate(reqs);
      ASSERT_EQ(a.size(), 10u);
      ASSERT_EQ(b.size(), 10u);
      for (size_t i = 0; i < a.size(); ++i) {
        EXPECT_EQ(a[i].completion_ids, b[i].completion_ids) << "fast " << fast << " rows " << rows << " seq " << i;
        EXPECT_EQ(a[i].logprobs, b[i].logprobs) << "fast " << fast << " rows " << rows << " seq " << i;
      }
      EXPECT_EQ(shared.stats().n_prefill_tokens, copied.stats().n_prefill_tokens);
    }
  }
}

// G samples of a P-token prompt hold the prompt once plus G rows of their
// own tokens; the prompt's copy is freed with the group's last row.
TEST(Engine, AGroupHoldsOneCopyOfItsPrompt) {
  auto model = tiny_model();
  const ModelConfig& c = model->config();
  const int64_t slot_bytes = c.num_hidden_layers * 2 * c.num_key_value_heads * c.resolved_head_dim() * 4;
  const int64_t G = 16, P = 64, new_tokens = 8;
  auto req = request(prompt(P, 6), 1.0, new_tokens, 3, G);
  RolloutEngine shared(model, nullptr, {});
  EngineOptions copied_opts;
  copied_opts.share_prompt_cache = false;
  RolloutEngine copied(model, nullptr, copied_opts);
  shared.generate({req});
  copied.generate({req});
  EXPECT_EQ(shared.cache_peak_bytes(), (G * new_tokens + P) * slot_bytes);
  EXPECT_EQ(shared.cache_bytes(), G * new_tokens * slot_bytes);  // the prompt's copy went with the group
  EXPECT_EQ(copied.cache_peak_bytes(), G * (P + new_tokens) * slot_bytes);
  EXPECT_EQ(copied.cache_bytes(), copied.cache_peak_bytes());
}

TEST(Engine, SameSeedSameOutputDifferentSeedDifferentOutput) {
  auto model = tiny_model();
  RolloutEngine e1(model, nullptr, {}), e2(model, nullptr, {});
  auto a = e1.generate({request(prompt(4, 9), 1.0, 20, 7, 2)});
  auto b = e2.generate({request(prompt(4, 9), 1.0, 20, 7, 2)});
  auto c = e2.generate({request(prompt(4, 9), 1.0, 20, 8, 2)});
  EXPECT_EQ(a[0].completion_ids, b[0].completion_ids);
  EXPECT_EQ(a[1].completion_ids, b[1].completion_ids);
  EXPECT_NE(a[0].completion_ids, c[0].completion_ids);
}

TEST(Engine, LogprobsEqualTheTrainersFullForward) {
  auto model = tiny_model();
  RolloutEngine engine(model, nullptr, {});
  auto out = engine.generate({request(prompt(6, 2), 1.0, 16, 3), request(prompt(11, 4), 0.7, 16, 5)});
  torch::NoGradGuard ng;
  for (const auto& s : out) {
    std::vector<int64_t> all(s.prompt_ids.begin(), s.prompt_ids.end());
    all.insert(all.end(), s.completion_ids.begin(), s.completion_ids.end());
    const int64_t T = static_cast<int64_t>(all.size()) - 1;
    auto ids = torch::tensor(std::vector<int64_t>(all.begin(), all.end() - 1)).view({1, T});
    auto tgt = torch::tensor(std::vector<int64_t>(all.begin() + 1, all.end())).view({1, T});
    auto pos = torch::arange(T, torch::kInt64).view({1, T});
    auto lp = model->token_logprobs(model->forward_hidden(ids, pos), tgt)[0];
    const int64_t P = static_cast<int64_t>(s.prompt_ids.size());
    for (size_t t = 0; t < s.logprobs.size(); ++t)
      EXPECT_NEAR(s.logprobs[t], lp[P - 1 + static_cast<int64_t>(t)].item<float>(), 2e-5) << "token " << t;
  }
}

// The logits [T, V] (fp32) at every position of prompt + completion, by the trainer's full forward.
torch::Tensor full_logits(CausalLM& model, const GeneratedSequence& s) {
  torch::NoGradGuard ng;
  std::vector<int64_t> all(s.prompt_ids.begin(), s.prompt_ids.end());
  all.insert(all.end(), s.completion_ids.begin(), s.completion_ids.end());
  const int64_t T = static_cast<int64_t>(all.size());
  auto ids = torch::tensor(all).view({1, T});
  auto pos = torch::arange(T, torch::kInt64).view({1, T});
  return model->logits(model->forward_hidden(ids, pos))[0].to(torch::kFloat32);
}

// What a request records of its draws for training (GenerationRequest::
// record_sampler_kl, record_kept), against the trainer's full forward: each
// filtered draw's kept set holds its token and top_k ids, its log-mass is
// log sum softmax over them, and sampler_kl is KL(sampling || learner) over
// the vocabulary written out here — 0 at temperature 1 when the learner
// replays the set, -log-mass when it does not, the tempered softmax's KL to
// the plain one, -log p when greedy. Recording changes no draw, on the CPU
// scan and the tensor path alike.
TEST(Engine, RecordsEachDrawsKeptSetAndItsKlToTheLearner) {
  auto model = tiny_model();
  for (bool tensor_sampling : {false, true}) {
    SCOPED_TRACE(tensor_sampling ? "tensor sampling" : "cpu sampling");
    EngineOptions eo;
    eo.tensor_sampling = tensor_sampling;
    RolloutEngine engine(model, nullptr, eo);
    auto topk = request(prompt(6, 2), 1.0, 12, 3);
    topk.params.top_k = 6;
    auto replay = topk, no_replay = topk;
    replay.record_sampler_kl = replay.record_kept = true;
    no_replay.record_sampler_kl = true;
    auto tempered = request(prompt(7, 4), 0.7, 12, 5), greedy = request(prompt(7, 4), 0.0, 6, 5);
    tempered.record_sampler_kl = greedy.record_sampler_kl = true;
    const auto out = engine.generate({topk, replay, no_replay, tempered, greedy});
    EXPECT_TRUE(out[0].sampler_kl.empty() && out[0].kept_ids.empty()) << "nothing recorded unless asked";
    EXPECT_EQ(out[1].completion_ids, out[0].completion_ids) << "recording changes no draw";
    EXPECT_EQ(out[2].completion_ids, out[0].completion_ids);
    const auto& r = out[1];
    const auto logits = full_logits(model, r);
    const int64_t P = static_cast<int64_t>(r.prompt_ids.size());
    ASSERT_EQ(r.kept_ids.size(), r.completion_ids.size());
    ASSERT_EQ(r.sampler_kl.size(), r.completion_ids.size());
    for (size_t t = 0; t < r.completion_ids.size(); ++t) {
      const auto l = logits[P - 1 + static_cast<int64_t>(t)];
      // The kept set: 6 distinct ids, the token among them, none of them below an id left out (the full
      // forward's logits differ from decoding's by float rounding, so a near-tie may order either way).
      const std::set<int32_t> got(r.kept_ids[t].begin(), r.kept_ids[t].end());
      ASSERT_EQ(got.size(), 6u) << "token " << t;
      EXPECT_TRUE(got.count(r.completion_ids[t])) << "token " << t;
      const auto ids = torch::tensor(std::vector<int64_t>(got.begin(), got.end()));
      auto rest = l.clone();
      rest.index_fill_(0, ids, -std::numeric_limits<float>::infinity());
      EXPECT_GE(l.index_select(0, ids).min().item<float>(), rest.max().item<float>() - 1e-4f) << "token " << t;
      const double log_mass = (torch::logsumexp(l.index_select(0, ids), 0) - torch::logsumexp(l, 0)).item<double>();
      EXPECT_NEAR(r.kept_logmass[t], log_mass, 2e-5) << "token " << t;
      EXPECT_NEAR(r.sampler_kl[t], 0.0, 2e-5) << "the learner replays the set the draw came from";
      EXPECT_NEAR(out[2].sampler_kl[t], -log_mass, 2e-5) << "KL(renormalised || whole) = -log mass";
    }
    const auto& q = out[3];
    const auto lq = full_logits(model, q);
    const int64_t Pq = static_cast<int64_t>(q.prompt_ids.size());
    for (size_t t = 0; t < q.completion_ids.size(); ++t) {
      const auto l = lq[Pq - 1 + static_cast<int64_t>(t)].to(torch::kFloat64);
      const auto log_q = torch::log_softmax(l / 0.7, 0), log_p = torch::log_softmax(l, 0);
      EXPECT_NEAR(q.sampler_kl[t], (log_q.exp() * (log_q - log_p)).sum().item<double>(), 1e-4) << "token " << t;
    }
    for (size_t t = 0; t < out[4].completion_ids.size(); ++t)
      EXPECT_NEAR(out[4].sampler_kl[t], -out[4].logprobs[t], 2e-5) << "greedy: KL(point mass || p) = -log p";
  }
}

TEST(Engine, FinishReasonsAndStopIds) {
  auto model = tiny_model();
  // Greedy output tells us which token comes third; stopping on it must end there.
  RolloutEngine probe(model, nullptr, {});
  auto free_run = probe.generate({request(prompt(5, 1), 0.0, 10, 1)});
  ASSERT_EQ(free_run[0].completion_ids.size(), 10u);
  EXPECT_EQ(free_run[0].finish_reason, FinishReason::Length);
  const int32_t third = free_run[0].completion_ids[2];

  auto req = request(prompt(5, 1), 0.0, 10, 1);
  req.params.stop_token_ids = {third};
  auto stopped = probe.generate({req});
  EXPECT_EQ(stopped[0].finish_reason, FinishReason::Stop);
  EXPECT_EQ(stopped[0].completion_ids.back(), third);
  EXPECT_LE(stopped[0].completion_ids.size(), 3u);

  EngineOptions eo;
  eo.eos_token_ids = {third};
  RolloutEngine with_eos(model, nullptr, eo);
  auto e = with_eos.generate({request(prompt(5, 1), 0.0, 10, 1)});
  EXPECT_EQ(e[0].stop, "eos");
  auto ignore = request(prompt(5, 1), 0.0, 10, 1);
  ignore.params.ignore_eos = true;
  EXPECT_EQ(with_eos.generate({ignore})[0].completion_ids.size(), 10u);
}

TEST(Engine, TopKOneIsGreedyAndFiltersRestrictTheSupport) {
  auto model = tiny_model();
  RolloutEngine engine(model, nullptr, {});
  auto greedy = engine.generate({request(prompt(5, 3), 0.0, 12, 1)});
  auto topk = request(prompt(5, 3), 1.5, 12, 99);
  topk.params.top_k = 1;
  EXPECT_EQ(engine.generate({topk})[0].completion_ids, greedy[0].completion_ids);
  auto tiny_p = request(prompt(5, 3), 1.5, 12, 99);
  tiny_p.params.top_p = 1e-6;
  EXPECT_EQ(engine.generate({tiny_p})[0].completion_ids, greedy[0].completion_ids);
  auto high_min_p = request(prompt(5, 3), 1.5, 12, 99);
  high_min_p.params.min_p = 0.999;
  EXPECT_EQ(engine.generate({high_min_p})[0].completion_ids, greedy[0].completion_ids);
}

TEST(Engine, CacheIsReservedAndReleasedExplicitly) {
  auto model = tiny_model();
  RolloutEngine engine(model, nullptr, {});
  EXPECT_EQ(engine.cache_bytes(), 0);
  engine.reserve_cache(4, 64);
  const int64_t reserved = engine.cache_bytes();
  EXPECT_GT(reserved, 0);
  engine.generate({request(prompt(3, 1), 1.0, 5, 1, 2)});
  EXPECT_EQ(engine.cache_bytes(), reserved);  // fits: no reallocation
  engine.release_cache();
  EXPECT_EQ(engine.cache_bytes(), 0);
}

TEST(Engine, BadRequestsAreClearErrors) {
  auto model = tiny_model();
  RolloutEngine engine(model, nullptr, {});
  auto expect_error = [&](GenerationRequest r, const std::string& needle) {
    try {
      engine.generate({r});
      ADD_FAILURE() << "no error for " << needle;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  expect_error(request({}, 1.0, 5, 1), "the prompt is empty");
  expect_error(request(prompt(3, 1), -1.0, 5, 1), "temperature must be >= 0");
  expect_error(request({9999}, 1.0, 5, 1), "outside the vocabulary");
  expect_error(request(prompt(600, 1), 1.0, 5, 1), "context limit");
  auto r = request(prompt(3, 1), 1.0, 5, 1);
  r.params.stop_strings = {"x"};
  expect_error(r, "stop strings need a tokenizer");
}

}  // namespace
}  // namespace rlf

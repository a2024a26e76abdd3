#include "rollout/engine.h"

#include <algorithm>
#include <chrono>

#include "rollout/batch_sampler.h"
#include "rollout/decoding_weights.h"
#include "rollout/model_runner.h"
#include "rollout/top_logprobs.h"
#include "util/error.h"

namespace rlf {

namespace {

using EngineClock = std::chrono::steady_clock;
double seconds_since(EngineClock::time_point t0) {
  return std::chrono::duration<double>(EngineClock::now() - t0).count();
}

}  // namespace

using rollout::Scheduler;
using rollout::Sequence;

void EngineOptions::validate() const {
  check(max_batch_rows > 0, "engine: max_batch_rows must be > 0 (got ", max_batch_rows, ")");
  check(max_seq_len >= 0, "engine: max_seq_len must be >= 0 (got ", max_seq_len, "; 0 = the model's limit)");
}

RolloutEngine::RolloutEngine(CausalLM model, std::shared_ptr<const Tokenizer> tokenizer, EngineOptions options)
    : model_(std::move(model)), tokenizer_(std::move(tokenizer)), options_(std::move(options)) {
  options_.validate();
  next_seed_ = options_.seed;
}

void RolloutEngine::reserve_cache(int64_t n_rows, int64_t max_len) {
  const torch::ScalarType dtype = model_->kv_cache_dtype();
  if (cache_.reserved() && cache_.n_rows() >= n_rows && cache_.max_len() >= max_len &&
      cache_.keys(0).scalar_type() == dtype)
    return;
  cache_.release();
  cache_ = KVCache(model_->config(), n_rows, max_len, dtype, model_->device());
}

void RolloutEngine::release_cache() { cache_.release(); }

bool RolloutEngine::shares_prompt(const GenerationRequest& req) const {
  return options_.share_prompt_cache && req.n > 1;
}

void RolloutEngine::seed_if_unset(GenerationRequest& req) {
  if (!req.params.seed) req.params.seed = mix_seed(next_seed_++);
}

int64_t RolloutEngine::context_limit() const {
  return options_.max_seq_len > 0 ? options_.max_seq_len : model_->config().max_position_embeddings;
}

void RolloutEngine::check_request(const GenerationRequest& req, const std::string& where) const {
  with_context(where, [&] { req.params.validate(); });
  check(!req.prompt_ids.empty(), where, ": the prompt is empty (add at least a BOS token)");
  check(req.n > 0, where, ": n must be > 0 (got ", req.n, ")");
  check(req.max_total_tokens >= 0, where, ": max_total_tokens must be >= 0 (got ", req.max_total_tokens,
        "; 0 = max_new_tokens)");
  check(req.top_logprobs >= 0 && req.top_logprobs <= model_->config().vocab_size, where,
        ": top_logprobs must be in [0, the vocabulary size ", model_->config().vocab_size, "] (got ", req.top_logprobs, ")");
  const int64_t P = static_cast<int64_t>(req.prompt_ids.size());
  const int64_t limit = context_limit();
  check(P < limit, where, ": the prompt has ", P, " tokens but the context limit is ", limit,
        " (max_position_embeddings or --max-seq-len)");
  for (int32_t id : req.prompt_ids)
    check(id >= 0 && id < model_->config().vocab_size, where, ": token id ", id, " is outside the vocabulary (",
          model_->config().vocab_size, ")");
  check(req.params.stop_strings.empty() || tokenizer_, where, ": stop strings need a tokenizer");
}

void RolloutEngine::step(Scheduler& sched, TurnHandler* handler, rollout::ServeSession* session) {
  admit(sched, handler);                      // schedule: waiting groups into free rows, their first tokens
  if (session) session->report();             // samples that ended on their first token
  if (sched.running().empty()) return;
  if (session) session->send_deltas();        // the first tokens of admitted rows
  decode(sched.running());                    // run: one token in and one out per running row
  end_turns(sched.running(), 0, handler);     // postprocess: stops, limits, continuations
  if (session) session->send_deltas();
  sched.compact();                            // finished rows leave the batch
  if (session) session->report();
}

void RolloutEngine::admit(Scheduler& sched, TurnHandler* handler) {
  torch::NoGradGuard no_grad;
  // Every group that fits now, their prompts prefilled together (rollout::prefill_prompts).
  auto& rows = sched.running();
  const int64_t first = static_cast<int64_t>(rows.size());
  std::vector<rollout::PromptPrefill> prompts;
  std::vector<int64_t> prompt_of_row;  // for each admitted row, its prompt's index
  while (const auto a = sched.next_admission()) {
    const GenerationRequest& req = *a->group.req;
    prompts.push_back({&req.prompt_ids, a->row0, a->n, shares_prompt(req)});
    for (int64_t j = 0; j < a->n; ++j) {
      rows.push_back(Sequence::start(a->group.request, a->group.first + j, req, context_limit(), tokenizer_.get()));
      prompt_of_row.push_back(static_cast<int64_t>(prompts.size()) - 1);
    }
    sched.admitted(a->n);
    const int64_t P = static_cast<int64_t>(req.prompt_ids.size());
    stats_.n_prefill_tokens += P;
    stats_.n_fed_tokens += P;
  }
  if (prompts.empty()) return;
  const auto t0 = EngineClock::now();
  const auto logits = rollout::prefill_prompts(*model_, cache_, prompts);
  stats_.prefill_s += seconds_since(t0);
  // Every sample of a group draws its first token from its prompt's logits.
  const auto index = torch::tensor(prompt_of_row, torch::kInt64).to(logits.device());
  take_tokens(logits.index_select(0, index).contiguous(), rows, first);
  end_turns(rows, first, handler);
  stats_.n_decode_tokens += static_cast<int64_t>(prompt_of_row.size());
  sched.compact();
}

void RolloutEngine::decode(std::vector<Sequence>& rows) {
  torch::NoGradGuard no_grad;
  const auto t0 = EngineClock::now();
  const auto logits = rollout::decode_logits(*model_, cache_, rows, &stats_.classifier_s);  // [n, V], model's device
  const auto t1 = EngineClock::now();
  take_tokens(logits, rows, 0);
  stats_.sample_s += seconds_since(t1);
  for (const Sequence& r : rows) stats_.n_decode_tokens += !r.just_forced;
  stats_.n_fed_tokens += static_cast<int64_t>(rows.size());
  stats_.n_steps += 1;
  stats_.decode_s += seconds_since(t0);
}

void RolloutEngine::take_tokens(const torch::Tensor& logits, std::vector<Sequence>& rows, int64_t row0) {
  rollout::sample_next_tokens(logits, rows, row0, options_.tensor_sampling);
  rollout::record_top_logprobs(logits, rows, row0);
}

void RolloutEngine::end_turns(std::vector<Sequence>& rows, int64_t row0, TurnHandler* handler) {
  const rollout::TurnRules rules{&options_.eos_token_ids, tokenizer_.get(), model_->config().vocab_size};
  for (size_t i = static_cast<size_t>(row0); i < rows.size(); ++i) {
    Sequence& row = rows[i];
    if (!row.just_forced && rules.turn_over(row)) stats_.n_appended_tokens += rules.end_turn(row, handler);
  }
}

std::vector<GeneratedSequence> RolloutEngine::generate(const std::vector<GenerationRequest>& requests,
                                                       TurnHandler* handler) {
  int64_t total = 0, max_len = 1;
  for (size_t r = 0; r < requests.size(); ++r) {
    const auto& req = requests[r];
    check_request(req, "generation request " + std::to_string(r));
    const int64_t P = static_cast<int64_t>(req.prompt_ids.size());
    const int64_t limit = rollout::row_limit(req, context_limit());
    max_len = std::max(max_len, shares_prompt(req) ? limit - P : limit);  // a shared prompt is not in the row
    total += req.n;
  }
  std::vector<GenerationRequest> seeded = requests;  // requests without a seed get one, in order
  for (auto& req : seeded) seed_if_unset(req);
  if (total == 0) return {};
  const rollout::DecodingWeights packed(*model_, stats_.pack_s);
  reserve_cache(std::min(options_.max_batch_rows, total), max_len);
  cache_.release_rows(0);  // prompts an interrupted call left behind

  Scheduler sched(cache_);
  for (size_t r = 0; r < seeded.size(); ++r) sched.add(static_cast<int64_t>(r), &seeded[r]);
  while (!sched.idle()) step(sched, handler, nullptr);
  std::vector<GeneratedSequence> done = sched.take_finished();
  std::sort(done.begin(), done.end(), [](const auto& a, const auto& b) {
    return a.request_index != b.request_index ? a.request_index < b.request_index : a.sample_index < b.sample_index;
  });
  return done;
}

void RolloutEngine::serve(RequestSource& source) {
  const rollout::DecodingWeights packed(*model_, stats_.pack_s);
  reserve_cache(options_.max_batch_rows, context_limit());
  cache_.release_rows(0);
  Scheduler sched(cache_);
  rollout::ServeSession session(source, sched);
  const auto prepare = [this](GenerationRequest& req, const std::string& where) {
    check_request(req, where);
    seed_if_unset(req);
  };
  while (session.open() || !sched.idle()) {
    session.poll(prepare);
    session.drop_cancelled();  // cancelled requests leave the queue and the batch
    try {
      sched.compact();
      session.report();
      step(sched, nullptr, &session);
    } catch (const std::exception& e) {
      session.fail_all(std::string("generation failed: ") + e.what());  // keeps serving
    }
  }
}

}  // namespace rlf

#include "rollout/engine.h"


#include <algorithm>
#include <chrono>
#include <deque>
#include <unordered_map>

#include "model/cpu_kernels.h"
#include "util/error.h"

namespace rlf {

namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

}  // namespace

const char* finish_reason_name(FinishReason r) { return r == FinishReason::Stop ? "stop" : "length"; }

void EngineOptions::validate() const {
  check(max_batch_rows > 0, "engine: max_batch_rows must be > 0 (got ", max_batch_rows, ")");
  check(max_seq_len >= 0, "engine: max_seq_len must be >= 0 (got ", max_seq_len, "; 0 = the model's limit)");
}

// One sequence being decoded; its index in the row vector is its cache row.
struct RolloutEngine::Row {
  int64_t request = 0;
  int64_t sample = 0;
  const GenerationRequest* req = nullptr;
  int64_t limit = 0;  // max prompt + completion tokens for this row
  std::vector<int32_t> completion;
  std::vector<float> logprobs;
  std::vector<std::vector<TokenLogprob>> top;  // per token, when req->top_logprobs > 0
  Rng rng{0};
  std::unique_ptr<StreamDecoder> decoder;
  std::string text;                        // the current turn, decoded
  int64_t turn = 0;                        // index of the current turn
  int64_t turn_begin = 0;                  // where the current turn starts in `completion`
  std::vector<CompletionSegment> segments; // finished turns and appended stretches
  std::vector<int32_t> forced;             // appended tokens not yet in `completion` (fed one per decode step)
  size_t forced_at = 0;                    // the next one to push
  bool just_forced = false;                // the token pushed last was forced, not sampled
  bool finished = false;
  bool overflowed = false;
  size_t streamed_tokens = 0;              // serve(): tokens already sent as deltas
  size_t streamed_text = 0;                // serve(): bytes of `text` already sent
  FinishReason reason = FinishReason::Length;
  std::string stop;

  int64_t length() const { return static_cast<int64_t>(req->prompt_ids.size() + completion.size()); }

  // With an appended token queued, pushes it as given (log-prob 0, nothing drawn) and returns true.
  bool push_forced() {
    just_forced = forced_at < forced.size();
    if (!just_forced) return false;
    completion.push_back(forced[forced_at++]);
    logprobs.push_back(0.0f);
    if (req->top_logprobs > 0) top.emplace_back();
    if (forced_at == forced.size()) forced.clear(), forced_at = 0;
    return true;
  }
};

namespace {

// Top-k, top-p or min-p restrict the support: such rows take the sorted path on their logits.
bool has_filters(const SamplingParams& p, int64_t vocab) {
  return (p.top_k > 0 && p.top_k < vocab) || p.top_p < 1 || p.min_p > 0;
}

// The temperature-1 normalisers of rows [row0, row0 + n): a non-finite one means corrupt weights.
template <class RowT>
void check_finite_normalisers(const float* lse, int64_t n, const std::vector<RowT>& rows, int64_t row0) {
  for (int64_t i = 0; i < n; ++i)
    check(std::isfinite(lse[i]), "the model produced non-finite logits (NaN or Inf) for sequence ",
          rows[row0 + i].request, "/", rows[row0 + i].sample,
          ": its weights are probably corrupt or diverged (check the checkpoint)");
}

// The model's weights packed for decoding while one generate or serve call
// runs (model/packed_weights.h): packed afresh at its start, since whatever
// ran before may have changed them, and freed at its end, so training steps
// between rollouts do not hold a second copy.
class DecodingWeights {
 public:
  DecodingWeights(CausalLMImpl& model, EngineStats& stats) : model_(model) {
    const auto t0 = std::chrono::steady_clock::now();
    model_.pack_for_decoding();
    stats.pack_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  ~DecodingWeights() { model_.release_decoding_weights(); }
  DecodingWeights(const DecodingWeights&) = delete;
  DecodingWeights& operator=(const DecodingWeights&) = delete;

 private:
  CausalLMImpl& model_;
};

}  // namespace

// Groups waiting for rows: (request, first sample, count).
struct Queue {
  struct Item {
    int64_t request;               // index (generate) or id (serve)
    const GenerationRequest* req;  // outlives the item's rows
    int64_t first, count;
  };
  std::deque<Item> items;
};

RolloutEngine::RolloutEngine(CausalLM model, std::shared_ptr<const Tokenizer> tokenizer, EngineOptions options)
    : model_(std::move(model)), tokenizer_(std::move(tokenizer)), options_(std::move(options)) {
  options_.validate();
  next_seed_ = options_.seed;
}

void RolloutEngine::reserve_cache(int64_t n_rows, int64_t max_len) {
  if (cache_.reserved() && cache_.n_rows() >= n_rows && cache_.max_len() >= max_len) return;
  cache_.release();
  cache_ = KVCache(model_->config(), n_rows, max_len, model_->dtype(), model_->device());
}

void RolloutEngine::release_cache() { cache_.release(); }

bool RolloutEngine::turn_over(Row& row) {
  const SamplingParams& p = row.req->params;
  const int32_t tok = row.completion.back();
  bool over = false;
  if (!p.ignore_eos && std::find(options_.eos_token_ids.begin(), options_.eos_token_ids.end(), tok) != options_.eos_token_ids.end()) {
    over = true, row.reason = FinishReason::Stop, row.stop = "eos";
  } else if (std::find(p.stop_token_ids.begin(), p.stop_token_ids.end(), tok) != p.stop_token_ids.end()) {
    over = true, row.reason = FinishReason::Stop, row.stop = "id:" + std::to_string(tok);
  } else if (row.decoder) {
    const size_t before = row.text.size();
    row.text += row.decoder->push(tok);
    for (const auto& s : p.stop_strings) {
      size_t from = before >= s.size() ? before - s.size() + 1 : 0;
      size_t at = row.text.find(s, from);
      if (at != std::string::npos) {
        row.text.resize(at);
        over = true, row.reason = FinishReason::Stop, row.stop = s;
        break;
      }
    }
  }
  const int64_t turn_tokens = static_cast<int64_t>(row.completion.size()) - row.turn_begin;
  if (!over && (turn_tokens >= p.max_new_tokens || row.length() >= row.limit)) {
    over = true, row.reason = FinishReason::Length, row.stop = "";
  }
  if (over && row.decoder && row.reason != FinishReason::Stop) row.text += row.decoder->finish();
  return over;
}

void RolloutEngine::end_turn(Row& row, TurnHandler* handler) {
  CompletionSegment seg;
  seg.sampled = true;
  seg.begin = row.turn_begin;
  seg.end = static_cast<int64_t>(row.completion.size());
  seg.text = std::move(row.text);
  seg.finish_reason = row.reason;
  seg.stop = row.stop;
  row.text.clear();
  row.segments.push_back(std::move(seg));
  const int64_t room = std::max<int64_t>(0, row.limit - row.length());
  if (!handler) {
    row.finished = true;
    return;
  }
  TurnEnd te;
  te.request_index = row.request;
  te.sample_index = row.sample;
  te.turn = row.turn;
  te.segment = &row.segments.back();
  te.completion_ids = &row.completion;
  te.length = row.length();
  te.room = room;
  TurnContinuation next = handler->on_turn_end(te);
  if (next.done) {
    row.finished = true;
    return;
  }
  if (static_cast<int64_t>(next.append_ids.size()) + 1 > room) {
    row.finished = true;
    row.overflowed = true;
    return;
  }
  for (int32_t id : next.append_ids)
    check(id >= 0 && id < model_->config().vocab_size, "appended token id ", id, " is outside the vocabulary (",
          model_->config().vocab_size, ")");

  // The appended ids are fed one per decode step, batched with every other
  // row (the step that feeds the turn's last sampled token pushes the first
  // of them; the step that feeds the last of them samples the next turn's
  // first token): the cost of a continuation is its new tokens only.
  if (!next.append_ids.empty()) {
    CompletionSegment obs;
    obs.sampled = false;
    obs.begin = static_cast<int64_t>(row.completion.size());
    obs.end = obs.begin + static_cast<int64_t>(next.append_ids.size());
    row.segments.push_back(std::move(obs));
    stats_.n_appended_tokens += static_cast<int64_t>(next.append_ids.size());
  }
  row.turn += 1;
  row.turn_begin = static_cast<int64_t>(row.completion.size() + next.append_ids.size());
  row.stop.clear();
  row.reason = FinishReason::Length;
  if (tokenizer_) {
    // A fresh decoder primed with the tail before the new turn, as for a prompt.
    row.decoder = std::make_unique<StreamDecoder>(*tokenizer_, /*skip_special=*/true);
    std::vector<int32_t> tail(row.completion.end() - std::min<size_t>(row.completion.size(), 8), row.completion.end());
    tail.insert(tail.end(), next.append_ids.begin(), next.append_ids.end());
    for (size_t j = tail.size() - std::min<size_t>(tail.size(), 8); j < tail.size(); ++j) row.decoder->push(tail[j]);
  }
  row.forced = std::move(next.append_ids);
  row.forced_at = 0;
}

void RolloutEngine::admit(Queue& queue, std::vector<Row>& rows, std::vector<GeneratedSequence>& done,
                          TurnHandler* handler) {
  torch::NoGradGuard no_grad;
  const auto device = model_->device();
  while (!queue.items.empty() && static_cast<int64_t>(rows.size()) < cache_.n_rows()) {
    auto& item = queue.items.front();
    const int64_t free_rows = cache_.n_rows() - static_cast<int64_t>(rows.size());
    const int64_t n = std::min(item.count, free_rows);
    const GenerationRequest& req = *item.req;
    const int64_t P = static_cast<int64_t>(req.prompt_ids.size());
    const int64_t row0 = static_cast<int64_t>(rows.size());

    // Prefill the prompt once. A group's rows share it (one copy of the
    // prompt's keys and values, read by all n rows); a single sample, or a
    // group with sharing off, holds it in its own row (copied to the group's
    // other rows).
    auto t0 = Clock::now();
    std::vector<int64_t> ids(req.prompt_ids.begin(), req.prompt_ids.end());
    auto input = torch::tensor(ids, torch::kInt64).view({1, P}).to(device);
    auto positions = torch::arange(P, torch::TensorOptions().dtype(torch::kInt64).device(device)).view({1, P});
    torch::Tensor hidden;
    if (shares_prompt(req)) {
      auto prefix = std::make_shared<KVCache>(model_->config(), 1, P, model_->dtype(), device);
      hidden = model_->forward_hidden(input, positions, prefix.get());
      cache_.set_prefix(row0, n, std::move(prefix));
    } else {
      cache_.set_prefix(row0, n, nullptr);
      KVCache view = cache_.rows(row0, 1);
      hidden = model_->forward_hidden(input, positions, &view);
      cache_.broadcast_prefix(row0, row0 + 1, n - 1, P);
    }
    auto last = model_->logits(hidden.narrow(1, P - 1, 1)).to(torch::kFloat32).contiguous();
    stats_.prefill_s += seconds_since(t0);
    stats_.n_prefill_tokens += P;
    stats_.n_fed_tokens += P;

    for (int64_t j = 0; j < n; ++j) {
      Row row;
      row.request = item.request;
      row.sample = item.first + j;
      row.req = &req;
      const int64_t model_limit = options_.max_seq_len > 0 ? options_.max_seq_len : model_->config().max_position_embeddings;
      row.limit = std::min(P + std::min(req.total_budget(), model_limit), model_limit);
      uint64_t base = req.params.seed ? *req.params.seed : 0;
      row.rng = Rng(mix_seed(base ^ mix_seed(static_cast<uint64_t>(row.sample) + 1)));
      if (tokenizer_) {
        // Prime the decoder with the prompt's tail so the completion's first
        // token decodes as a continuation (e.g. keeps its leading space).
        row.decoder = std::make_unique<StreamDecoder>(*tokenizer_, /*skip_special=*/true);
        for (int64_t k = std::max<int64_t>(0, P - 8); k < P; ++k) row.decoder->push(req.prompt_ids[k]);
      }
      rows.push_back(std::move(row));
    }
    // Every sample of the group draws its first token from the shared logits.
    auto group_logits = last.view({1, -1}).expand({n, -1}).contiguous();
    sample_rows(group_logits, rows, row0);
    record_top_logprobs(group_logits, rows, row0);
    for (int64_t j = 0; j < n; ++j)
      if (turn_over(rows[row0 + j])) end_turn(rows[row0 + j], handler);
    stats_.n_decode_tokens += n;
    item.first += n;
    item.count -= n;
    if (item.count == 0) queue.items.pop_front();
    compact(rows, done);
  }
}

void RolloutEngine::decode_step(std::vector<Row>& rows) {
  torch::NoGradGuard no_grad;
  auto t0 = Clock::now();
  const auto device = model_->device();
  const int64_t n = static_cast<int64_t>(rows.size());
  std::vector<int64_t> ids(n), pos(n);
  for (int64_t i = 0; i < n; ++i) {
    ids[i] = rows[i].completion.back();
    pos[i] = rows[i].length() - 1;
  }
  auto input = torch::tensor(ids, torch::kInt64).view({n, 1}).to(device);
  auto positions = torch::tensor(pos, torch::kInt64).view({n, 1}).to(device);
  KVCache view = cache_.rows(0, n);
  auto hidden = model_->forward_hidden(input, positions, &view);
  auto logits = model_->logits(hidden).to(torch::kFloat32).contiguous().view({n, -1});  // [n, V], on the model's device
  sample_rows(logits, rows, 0);
  record_top_logprobs(logits, rows, 0);
  for (const Row& r : rows) stats_.n_decode_tokens += !r.just_forced;
  stats_.n_fed_tokens += n;
  stats_.n_steps += 1;
  stats_.decode_s += seconds_since(t0);
}

void RolloutEngine::sample_rows_on_device(const torch::Tensor& logits, std::vector<Row>& rows, int64_t row0) {
  const int64_t n = logits.size(0), V = logits.size(1);
  const auto dev = logits.device();
  std::vector<float> inv_t(static_cast<size_t>(n), 1.0f);
  std::vector<double> u(static_cast<size_t>(n), 0.0);
  std::vector<int64_t> plain, other;  // rows drawn on the device / on the CPU
  for (int64_t i = 0; i < n; ++i) {
    Row& row = rows[row0 + i];
    if (row.forced_at < row.forced.size()) continue;
    const SamplingParams& p = row.req->params;
    const bool filtered = has_filters(p, V);
    if (p.temperature == 0 || filtered) {
      other.push_back(i);
    } else {
      plain.push_back(i);
      inv_t[i] = static_cast<float>(1.0 / p.temperature);
      u[i] = row.rng.uniform();  // draw_from_weights' one draw
    }
  }
  const auto lse = logits.logsumexp(-1).to(torch::kCPU).contiguous();  // [n]
  const float* ls = lse.data_ptr<float>();
  check_finite_normalisers(ls, n, rows, row0);
  std::vector<int32_t> ids(static_cast<size_t>(n), 0);
  std::vector<float> chosen(static_cast<size_t>(n), 0.0f);
  if (!plain.empty()) {
    const auto f32 = torch::TensorOptions().dtype(torch::kFloat32);
    const auto t = torch::from_blob(inv_t.data(), {n, 1}, f32).to(dev);
    const auto probs = torch::softmax(logits * t, -1);
    // The first index whose cumulative probability exceeds u (fp64 sums, as the CPU scan);
    // rounding that leaves u above the total takes the last positive entry.
    const auto cdf = probs.to(torch::kFloat64).cumsum(-1);
    const auto uu = torch::from_blob(u.data(), {n, 1}, torch::TensorOptions().dtype(torch::kFloat64)).to(dev);
    auto idx = torch::searchsorted(cdf, uu, /*out_int32=*/false, /*right=*/true);  // [n, 1]
    const auto last_positive =
        ((probs > 0).to(torch::kInt64) * torch::arange(V, torch::TensorOptions().dtype(torch::kInt64).device(dev)))
            .amax({-1}, /*keepdim=*/true);
    idx = torch::where(idx >= V, last_positive, idx);
    const auto picked = torch::cat({idx.to(torch::kFloat64), logits.gather(1, idx).to(torch::kFloat64)}, 1)
                            .to(torch::kCPU)
                            .contiguous();  // [n, 2]: id, logit
    const double* pk = picked.data_ptr<double>();
    for (int64_t i : plain) ids[i] = static_cast<int32_t>(pk[2 * i]), chosen[i] = static_cast<float>(pk[2 * i + 1]);
  }
  if (!other.empty()) {
    const auto sel = torch::tensor(other, torch::kInt64).to(dev);
    const auto host = logits.index_select(0, sel).to(torch::kCPU).contiguous();
    const float* lg = host.data_ptr<float>();
    SamplerScratch scratch;
    for (size_t k = 0; k < other.size(); ++k) {
      const int64_t i = other[k];
      ids[i] = sample_token_id(lg + k * V, V, rows[row0 + i].req->params, rows[row0 + i].rng, scratch);
      chosen[i] = lg[k * V + ids[i]];
    }
  }
  for (int64_t i = 0; i < n; ++i) {
    Row& row = rows[row0 + i];
    if (row.push_forced()) continue;
    row.completion.push_back(ids[i]);
    row.logprobs.push_back(chosen[i] - ls[i]);
  }
}

void RolloutEngine::sample_rows(const torch::Tensor& logits, std::vector<Row>& rows, int64_t row0) {
  if (!logits.is_cpu() || options_.tensor_sampling) return sample_rows_on_device(logits, rows, row0);
  const int64_t n = logits.size(0), V = logits.size(1);
  // One kernel over the batch (cpu::softmax_rows, rows in parallel): the
  // temperature-1 normaliser (for log-probs) and the tempered probabilities
  // (for plain sampling); rows with filters (top-k/top-p/min-p) take the
  // sorted path on their logits.
  std::vector<float> inv_t(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const double t = rows[row0 + i].req->params.temperature;
    inv_t[i] = t > 0 ? static_cast<float>(1.0 / t) : 1.0f;
  }
  auto lse = torch::empty({n}, torch::kFloat32);
  auto probs = torch::empty({n, V}, torch::kFloat32);
  cpu::softmax_rows(logits.data_ptr<float>(), inv_t.data(), n, V, lse.data_ptr<float>(), probs.data_ptr<float>());
  check_finite_normalisers(lse.data_ptr<float>(), n, rows, row0);
  const float* lg = logits.data_ptr<float>();
  const float* pr = probs.data_ptr<float>();
  const float* ls = lse.data_ptr<float>();
  cpu::parallel_rows(n, [&](int64_t begin, int64_t end) {  // each row draws from its own generator
    thread_local SamplerScratch scratch;
    for (int64_t i = begin; i < end; ++i) {
      Row& row = rows[row0 + i];
      if (row.push_forced()) continue;  // an appended token: pushed as given, nothing drawn
      const SamplingParams& p = row.req->params;
      const bool filtered = has_filters(p, V);
      int32_t id = 0;
      if (p.temperature == 0 || filtered) id = sample_token_id(lg + i * V, V, p, row.rng, scratch);
      else id = draw_from_weights(pr + i * V, V, 1.0, row.rng);
      row.completion.push_back(id);
      row.logprobs.push_back(lg[i * V + id] - ls[i]);
    }
  });
}

void RolloutEngine::compact(std::vector<Row>& rows, std::vector<GeneratedSequence>& done) {
  auto emit = [&](Row& r) {
    GeneratedSequence s;
    s.request_index = r.request;
    s.sample_index = r.sample;
    s.prompt_ids = r.req->prompt_ids;
    s.completion_ids = std::move(r.completion);
    s.logprobs = std::move(r.logprobs);
    s.top_logprobs = std::move(r.top);
    s.finish_reason = r.reason;
    s.stop = std::move(r.stop);
    s.text = r.segments.empty() ? std::string() : r.segments.back().text;
    s.segments = std::move(r.segments);
    s.overflowed = r.overflowed;
    done.push_back(std::move(s));
  };
  // Fill each finished row's slot with the last live row (one cache copy each).
  size_t i = 0;
  while (i < rows.size()) {
    if (!rows[i].finished) {
      ++i;
      continue;
    }
    emit(rows[i]);
    while (rows.size() > i + 1 && rows.back().finished) {
      emit(rows.back());
      rows.pop_back();
    }
    if (rows.size() > i + 1) {
      const int64_t src = static_cast<int64_t>(rows.size()) - 1;
      cache_.move_row(src, static_cast<int64_t>(i), rows.back().length() - 1);
      rows[i] = std::move(rows.back());
    }
    rows.pop_back();
  }
  cache_.release_rows(static_cast<int64_t>(rows.size()));  // a group's shared prompt goes with its last row
}

bool RolloutEngine::shares_prompt(const GenerationRequest& req) const {
  return options_.share_prompt_cache && req.n > 1;
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

std::vector<GeneratedSequence> RolloutEngine::generate(const std::vector<GenerationRequest>& requests,
                                                       TurnHandler* handler) {
  const int64_t model_limit = context_limit();
  int64_t total = 0, max_len = 1;
  for (size_t r = 0; r < requests.size(); ++r) {
    const auto& req = requests[r];
    check_request(req, "generation request " + std::to_string(r));
    const int64_t P = static_cast<int64_t>(req.prompt_ids.size());
    const int64_t row_limit = std::min(P + std::min(req.total_budget(), model_limit), model_limit);
    max_len = std::max(max_len, shares_prompt(req) ? row_limit - P : row_limit);  // a shared prompt is not in the row
    total += req.n;
  }
  std::vector<GenerationRequest> seeded = requests;  // requests without a seed get one, in order
  for (auto& req : seeded)
    if (!req.params.seed) req.params.seed = mix_seed(next_seed_++);
  if (total == 0) return {};
  const DecodingWeights packed(*model_, stats_);
  Queue queue;
  for (size_t r = 0; r < seeded.size(); ++r) queue.items.push_back({static_cast<int64_t>(r), &seeded[r], 0, seeded[r].n});
  reserve_cache(std::min(options_.max_batch_rows, total), max_len);
  cache_.release_rows(0);  // prompts an interrupted call left behind

  std::vector<Row> rows;
  std::vector<GeneratedSequence> done;
  done.reserve(static_cast<size_t>(total));
  while (!queue.items.empty() || !rows.empty()) {
    admit(queue, rows, done, handler);
    if (rows.empty()) continue;
    decode_step(rows);
    for (auto& row : rows)
      if (!row.just_forced && turn_over(row)) end_turn(row, handler);
    compact(rows, done);
  }
  std::sort(done.begin(), done.end(), [](const auto& a, const auto& b) {
    return a.request_index != b.request_index ? a.request_index < b.request_index : a.sample_index < b.sample_index;
  });
  return done;
}

void RolloutEngine::record_top_logprobs(const torch::Tensor& logits, std::vector<Row>& rows, int64_t row0) {
  const int64_t n = logits.size(0);
  int64_t k_max = 0;
  for (int64_t i = 0; i < n; ++i)
    if (!rows[row0 + i].just_forced) k_max = std::max(k_max, rows[row0 + i].req->top_logprobs);
  if (k_max == 0) return;
  torch::NoGradGuard no_grad;
  auto lp = torch::log_softmax(logits.to(torch::kFloat32), -1);
  auto [values, indices] = lp.topk(k_max, -1);  // sorted, most likely first
  values = values.to(torch::kCPU).contiguous();
  indices = indices.to(torch::kCPU).to(torch::kInt64).contiguous();
  const float* v = values.data_ptr<float>();
  const int64_t* ix = indices.data_ptr<int64_t>();
  for (int64_t i = 0; i < n; ++i) {
    Row& row = rows[row0 + i];
    const int64_t k = row.req->top_logprobs;
    if (k == 0 || row.just_forced) continue;  // a forced token pushed its empty entry already
    std::vector<TokenLogprob> top(static_cast<size_t>(k));
    for (int64_t j = 0; j < k; ++j) top[j] = {static_cast<int32_t>(ix[i * k_max + j]), v[i * k_max + j]};
    row.top.push_back(std::move(top));
  }
}

namespace {

// The longest prefix of `text`, ending on a UTF-8 character boundary, that no
// stop string can still extend into: it holds back max(len(stop)) - 1 bytes.
size_t stream_safe_length(const std::string& text, const std::vector<std::string>& stops) {
  size_t hold = 0;
  for (const auto& s : stops) hold = std::max(hold, s.empty() ? 0 : s.size() - 1);
  size_t safe = text.size() > hold ? text.size() - hold : 0;
  while (safe > 0 && safe < text.size() && (static_cast<unsigned char>(text[safe]) & 0xC0) == 0x80) --safe;
  return safe;
}

}  // namespace

void RolloutEngine::send_deltas(std::vector<Row>& rows, RequestSource& source) {
  for (Row& row : rows) {
    if (row.finished) continue;  // on_finished carries the rest
    const size_t safe = stream_safe_length(row.text, row.req->params.stop_strings);
    if (row.completion.size() == row.streamed_tokens && safe <= row.streamed_text) continue;
    StreamDelta d;
    d.id = row.request;
    d.sample = row.sample;
    d.token_begin = static_cast<int64_t>(row.streamed_tokens);
    d.token_ids.assign(row.completion.begin() + row.streamed_tokens, row.completion.end());
    d.logprobs.assign(row.logprobs.begin() + row.streamed_tokens, row.logprobs.end());
    if (!row.top.empty()) d.top_logprobs.assign(row.top.begin() + row.streamed_tokens, row.top.end());
    d.text_begin = static_cast<int64_t>(row.streamed_text);
    if (safe > row.streamed_text) d.text = row.text.substr(row.streamed_text, safe - row.streamed_text);
    row.streamed_tokens = row.completion.size();
    row.streamed_text = std::max(row.streamed_text, safe);
    source.on_delta(d);
  }
}

void RolloutEngine::serve(RequestSource& source) {
  struct Live {
    std::unique_ptr<GenerationRequest> req;
    int64_t remaining = 0;  // samples not yet reported
    bool failed = false;
  };
  std::unordered_map<int64_t, Live> live;
  const int64_t limit = context_limit();
  const DecodingWeights packed(*model_, stats_);
  reserve_cache(options_.max_batch_rows, limit);
  cache_.release_rows(0);
  Queue queue;
  std::vector<Row> rows;
  std::vector<GeneratedSequence> done;
  std::vector<LiveRequest> incoming;

  // Reports finished samples (a cancelled or failed request's are dropped) and forgets finished requests.
  auto dispatch = [&] {
    for (auto& seq : done) {
      auto it = live.find(seq.request_index);
      if (it == live.end()) continue;
      const int64_t id = it->first;
      if (!it->second.failed && !source.cancelled(id)) source.on_finished(std::move(seq));
      if (--it->second.remaining == 0) live.erase(it);
    }
    done.clear();
  };
  // Fails every request with rows or queue items (the batch's state is lost), keeps serving.
  auto fail_all = [&](const std::string& error) {
    for (auto& row : rows) row.finished = true;
    for (auto& [id, l] : live)
      if (!l.failed) l.failed = true, source.on_failed(id, error);
    rows.clear();
    cache_.release_rows(0);
    queue.items.clear();
    live.clear();
    done.clear();
  };

  bool open = true;
  while (open || !queue.items.empty() || !rows.empty()) {
    if (open) {
      incoming.clear();
      open = source.poll(incoming, rows.empty() && queue.items.empty());
      for (auto& lr : incoming) {
        const std::string where = "request " + std::to_string(lr.id);
        try {
          check(!live.count(lr.id), where, ": the id is already in use by a request being served");
          check_request(lr.request, where);
        } catch (const Error& e) {
          source.on_failed(lr.id, e.what());
          continue;
        }
        auto req = std::make_unique<GenerationRequest>(std::move(lr.request));
        if (!req->params.seed) req->params.seed = mix_seed(next_seed_++);
        queue.items.push_back({lr.id, req.get(), 0, req->n});
        const int64_t n = req->n;
        live[lr.id] = Live{std::move(req), n, false};
      }
    }
    // Cancelled requests leave the queue and the batch.
    for (auto it = queue.items.begin(); it != queue.items.end();) {
      if (source.cancelled(it->request)) {
        auto l = live.find(it->request);
        if (l != live.end() && (l->second.remaining -= it->count) <= 0) live.erase(l);
        it = queue.items.erase(it);
      } else {
        ++it;
      }
    }
    for (auto& row : rows)
      if (source.cancelled(row.request)) row.finished = true;
    try {
      compact(rows, done);
      dispatch();
      admit(queue, rows, done, nullptr);
      dispatch();
      if (rows.empty()) continue;
      send_deltas(rows, source);  // the first tokens of admitted rows
      decode_step(rows);
      for (auto& row : rows)
        if (turn_over(row)) end_turn(row, nullptr);
      send_deltas(rows, source);
      compact(rows, done);
      dispatch();
    } catch (const std::exception& e) {
      fail_all(std::string("generation failed: ") + e.what());
    }
  }
}

}  // namespace rlf

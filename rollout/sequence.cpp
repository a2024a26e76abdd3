#include "rollout/sequence.h"

#include <algorithm>

namespace rlf {

const char* finish_reason_name(FinishReason r) { return r == FinishReason::Stop ? "stop" : "length"; }

namespace rollout {

int64_t row_limit(const GenerationRequest& req, int64_t context_limit) {
  const int64_t P = static_cast<int64_t>(req.prompt_ids.size());
  return std::min(P + std::min(req.total_budget(), context_limit), context_limit);
}

Sequence Sequence::start(int64_t request, int64_t sample, const GenerationRequest& req, int64_t context_limit,
                         const Tokenizer* tokenizer) {
  Sequence s;
  s.request = request;
  s.sample = sample;
  s.req = &req;
  s.limit = row_limit(req, context_limit);
  const uint64_t base = req.params.seed ? *req.params.seed : 0;
  s.rng = Rng(derive_seed(base, static_cast<uint64_t>(sample) + 1));
  if (tokenizer) {
    const int64_t P = static_cast<int64_t>(req.prompt_ids.size());
    s.decoder = std::make_unique<StreamDecoder>(*tokenizer, /*skip_special=*/true);
    for (int64_t k = std::max<int64_t>(0, P - 8); k < P; ++k) s.decoder->push(req.prompt_ids[k]);
  }
  return s;
}

bool Sequence::push_forced() {
  just_forced = has_forced();
  if (!just_forced) return false;
  completion.push_back(forced[forced_at++]);
  logprobs.push_back(0.0f);
  if (req->top_logprobs > 0) top.emplace_back();
  if (req->record_sampler_kl) sampler_kl.push_back(0.0f);
  if (req->record_kept) kept_logmass.push_back(0.0f), kept_ids.emplace_back();
  if (forced_at == forced.size()) forced.clear(), forced_at = 0;
  return true;
}

void Sequence::push_sampled(int32_t id, float logprob, DrawRecord record) {
  just_forced = false;
  completion.push_back(id);
  logprobs.push_back(logprob);
  if (req->record_sampler_kl) sampler_kl.push_back(record.sampler_kl);
  if (req->record_kept) kept_logmass.push_back(record.kept_logmass), kept_ids.push_back(std::move(record.kept_ids));
}

GeneratedSequence Sequence::release() {
  GeneratedSequence s;
  s.request_index = request;
  s.sample_index = sample;
  s.prompt_ids = req->prompt_ids;
  s.completion_ids = std::move(completion);
  s.logprobs = std::move(logprobs);
  s.top_logprobs = std::move(top);
  s.sampler_kl = std::move(sampler_kl);
  s.kept_ids = std::move(kept_ids);
  s.kept_logmass = std::move(kept_logmass);
  s.finish_reason = reason;
  s.stop = std::move(stop);
  s.text = segments.empty() ? std::string() : segments.back().text;
  s.segments = std::move(segments);
  s.overflowed = overflowed;
  return s;
}

}  // namespace rollout
}  // namespace rlf

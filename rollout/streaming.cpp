#include "rollout/streaming.h"

#include <algorithm>

#include "util/error.h"

namespace rlf::rollout {

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

void ServeSession::poll(const Prepare& prepare) {
  if (!open_) return;
  incoming_.clear();
  open_ = source_.poll(incoming_, scheduler_.idle());
  for (auto& lr : incoming_) accept(lr, prepare);
}

void ServeSession::accept(LiveRequest& lr, const Prepare& prepare) {
  const std::string where = "request " + std::to_string(lr.id);
  try {
    check(!live_.count(lr.id), where, ": the id is already in use by a request being served");
    prepare(lr.request, where);
  } catch (const Error& e) {
    source_.on_failed(lr.id, e.what());
    return;
  }
  auto req = std::make_unique<GenerationRequest>(std::move(lr.request));
  scheduler_.add(lr.id, req.get());
  const int64_t n = req->n;
  live_[lr.id] = Live{std::move(req), n, false};
}

void ServeSession::drop_cancelled() {
  auto& waiting = scheduler_.waiting();
  for (auto it = waiting.begin(); it != waiting.end();) {
    if (source_.cancelled(it->request)) {
      auto l = live_.find(it->request);
      if (l != live_.end() && (l->second.remaining -= it->count) <= 0) live_.erase(l);
      it = waiting.erase(it);
    } else {
      ++it;
    }
  }
  for (auto& row : scheduler_.running())
    if (source_.cancelled(row.request)) row.finished = true;
}

void ServeSession::report() {
  for (auto& seq : scheduler_.take_finished()) {
    auto it = live_.find(seq.request_index);
    if (it == live_.end()) continue;
    const int64_t id = it->first;
    if (!it->second.failed && !source_.cancelled(id)) source_.on_finished(std::move(seq));
    if (--it->second.remaining == 0) live_.erase(it);
  }
}

void ServeSession::send_deltas() {
  for (Sequence& row : scheduler_.running()) {
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
    source_.on_delta(d);
  }
}

void ServeSession::fail_all(const std::string& error) {
  for (auto& [id, l] : live_)
    if (!l.failed) l.failed = true, source_.on_failed(id, error);
  scheduler_.clear();
  live_.clear();
}

}  // namespace rlf::rollout

#include "rollout/turns.h"

#include <algorithm>

#include "util/error.h"

namespace rlf::rollout {

namespace {

bool has_id(const std::vector<int32_t>& ids, int32_t id) { return std::find(ids.begin(), ids.end(), id) != ids.end(); }

// Decodes `tok` into seq.text; on a stop string cuts the text before it and returns true.
bool completes_stop_string(Sequence& seq, int32_t tok) {
  const size_t before = seq.text.size();
  seq.text += seq.decoder->push(tok);
  for (const auto& s : seq.req->params.stop_strings) {
    const size_t from = before >= s.size() ? before - s.size() + 1 : 0;
    const size_t at = seq.text.find(s, from);
    if (at != std::string::npos) {
      seq.text.resize(at);
      seq.reason = FinishReason::Stop, seq.stop = s;
      return true;
    }
  }
  return false;
}

// Closes the current turn as a sampled segment (its text moves into it).
void close_turn(Sequence& seq) {
  CompletionSegment seg;
  seg.sampled = true;
  seg.begin = seq.turn_begin;
  seg.end = static_cast<int64_t>(seq.completion.size());
  seg.text = std::move(seq.text);
  seg.finish_reason = seq.reason;
  seg.stop = seq.stop;
  seq.text.clear();
  seq.segments.push_back(std::move(seg));
}

// Marks the sequence finished; returns 0 (no tokens queued).
int64_t finish_sequence(Sequence& seq) {
  seq.finished = true;
  return 0;
}

// Opens the next turn after `append_ids` (queued, not yet in the completion).
void open_turn(Sequence& seq, std::vector<int32_t> append_ids, const Tokenizer* tokenizer) {
  if (!append_ids.empty()) {
    CompletionSegment obs;
    obs.sampled = false;
    obs.begin = static_cast<int64_t>(seq.completion.size());
    obs.end = obs.begin + static_cast<int64_t>(append_ids.size());
    seq.segments.push_back(std::move(obs));
  }
  seq.turn += 1;
  seq.turn_begin = static_cast<int64_t>(seq.completion.size() + append_ids.size());
  seq.stop.clear();
  seq.reason = FinishReason::Length;
  if (tokenizer) {
    // A fresh decoder primed with the tail before the new turn, as for a prompt.
    seq.decoder = std::make_unique<StreamDecoder>(*tokenizer, /*skip_special=*/true);
    std::vector<int32_t> tail(seq.completion.end() - std::min<size_t>(seq.completion.size(), 8), seq.completion.end());
    tail.insert(tail.end(), append_ids.begin(), append_ids.end());
    for (size_t j = tail.size() - std::min<size_t>(tail.size(), 8); j < tail.size(); ++j) seq.decoder->push(tail[j]);
  }
  seq.forced = std::move(append_ids);
  seq.forced_at = 0;
}

}  // namespace

bool TurnRules::turn_over(Sequence& seq) const {
  const SamplingParams& p = seq.req->params;
  const int32_t tok = seq.completion.back();
  bool over = false;
  if (!p.ignore_eos && has_id(*eos_token_ids, tok)) {
    over = true, seq.reason = FinishReason::Stop, seq.stop = "eos";
  } else if (has_id(p.stop_token_ids, tok)) {
    over = true, seq.reason = FinishReason::Stop, seq.stop = "id:" + std::to_string(tok);
  } else if (seq.decoder) {
    over = completes_stop_string(seq, tok);
  }
  const int64_t turn_tokens = static_cast<int64_t>(seq.completion.size()) - seq.turn_begin;
  if (!over && (turn_tokens >= p.max_new_tokens || seq.length() >= seq.limit)) {
    over = true, seq.reason = FinishReason::Length, seq.stop = "";
  }
  if (over && seq.decoder && seq.reason != FinishReason::Stop) seq.text += seq.decoder->finish();
  return over;
}

int64_t TurnRules::end_turn(Sequence& seq, TurnHandler* handler) const {
  close_turn(seq);
  const int64_t room = std::max<int64_t>(0, seq.limit - seq.length());
  if (!handler) return finish_sequence(seq);
  TurnEnd te;
  te.request_index = seq.request;
  te.sample_index = seq.sample;
  te.turn = seq.turn;
  te.segment = &seq.segments.back();
  te.completion_ids = &seq.completion;
  te.length = seq.length();
  te.room = room;
  TurnContinuation next = handler->on_turn_end(te);
  if (next.done) return finish_sequence(seq);
  if (static_cast<int64_t>(next.append_ids.size()) + 1 > room) {
    seq.overflowed = true;
    return finish_sequence(seq);
  }
  for (int32_t id : next.append_ids)
    check(id >= 0 && id < vocab_size, "appended token id ", id, " is outside the vocabulary (", vocab_size, ")");
  const auto n_appended = static_cast<int64_t>(next.append_ids.size());
  open_turn(seq, std::move(next.append_ids), tokenizer);
  return n_appended;
}

}  // namespace rlf::rollout

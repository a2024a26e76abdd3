// Turns: when a sequence's turn is over, and how a conversation goes on.
//
// A turn ends at an EOS id (unless the request ignores EOS), a stop id, a
// stop string (matched on the incrementally decoded text; the text is cut
// before it, the token that completed it stays in the completion), the turn's
// token limit (max_new_tokens) or the row's limit (row_limit). Without a
// TurnHandler the sequence then finishes. With one, the handler sees the turn
// and either ends the sequence or returns observation tokens; those are
// queued on the sequence (Sequence::forced) and fed one per decode step, in
// the same batch as every other row, and the step that feeds the last of them
// samples the next turn's first token (rollout/engine.h has the whole story).
#pragma once

#include <cstdint>
#include <vector>

#include "rollout/sequence.h"

namespace rlf {

// What the handler sees when a turn ends.
struct TurnEnd {
  int64_t request_index = 0;
  int64_t sample_index = 0;
  int64_t turn = 0;                      // 0-based index of the turn that just ended
  const CompletionSegment* segment = nullptr;  // the turn (text, finish reason, stop)
  const std::vector<int32_t>* completion_ids = nullptr;  // everything after the prompt so far
  int64_t length = 0;                    // tokens in the sequence now (prompt included)
  int64_t room = 0;                      // tokens the sequence may still grow by (budget and context; 0 = none)
};

// The handler's answer: end the sequence, or append `append_ids` (possibly
// none) and let the policy take another turn. Continuing needs
// append_ids.size() + 1 <= room (at least one token left for the policy);
// otherwise the sequence ends with GeneratedSequence::overflowed set.
struct TurnContinuation {
  bool done = true;
  std::vector<int32_t> append_ids;
};

// Decides, at the end of each turn, how a conversation goes on. Called on the
// engine's thread, between decode steps; an exception from it propagates out
// of generate() (handlers catch their own per-sequence failures).
class TurnHandler {
 public:
  virtual ~TurnHandler() = default;
  virtual TurnContinuation on_turn_end(const TurnEnd& turn) = 0;
};

namespace rollout {

// What decides a turn's end and checks a continuation (the engine's, fixed for its life).
struct TurnRules {
  const std::vector<int32_t>* eos_token_ids = nullptr;  // never null
  const Tokenizer* tokenizer = nullptr;                 // null: no text, no stop strings
  int64_t vocab_size = 0;                               // appended ids must be below it

  // After `seq` took a token: true when its current turn is over (sets
  // seq.reason and seq.stop; decodes the token into seq.text).
  bool turn_over(Sequence& seq) const;
  // After turn_over: closes the turn as a segment, asks `handler` (may be
  // null: the sequence finishes) and either finishes the sequence or queues
  // the handler's tokens for the next steps. Returns the tokens queued.
  // Throws rlf::Error when an appended id is outside the vocabulary.
  int64_t end_turn(Sequence& seq, TurnHandler* handler) const;
};

}  // namespace rollout
}  // namespace rlf

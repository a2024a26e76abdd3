// The scheduler (continuous batching; nano-vllm's Scheduler): which
// sequences decode together.
//
// Requests wait as groups (all n samples of one request) in arrival order.
// Admission takes the front group's samples into the free cache rows (as
// many as fit: a group larger than the free rows is split across
// admissions). The running rows stay contiguous, rows [0, n) of the cache,
// so a decode step is one forward over them: when a row finishes, the last
// running row's cache moves into its slot (one copy) and the finished
// sequence's result is kept until the caller takes it.
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <vector>

#include "model/kv_cache.h"
#include "rollout/sequence.h"

namespace rlf::rollout {

class Scheduler {
 public:
  // Samples [first, first + count) of a request still waiting.
  struct Group {
    int64_t request = 0;                     // index (generate) or id (serve)
    const GenerationRequest* req = nullptr;  // outlives the group's sequences
    int64_t first = 0, count = 0;
  };
  // The next admission: `n` samples of `group` into rows [row0, row0 + n).
  struct Admission {
    Group group;
    int64_t row0 = 0, n = 0;
  };

  // `cache` (reserved; its rows are the batch's slots) outlives the scheduler.
  explicit Scheduler(KVCache& cache) : cache_(cache) {}

  // Queues all req.n samples of `req` under the key `request`.
  void add(int64_t request, const GenerationRequest* req) { waiting_.push_back({request, req, 0, req->n}); }
  // Nothing waiting and nothing running.
  bool idle() const { return waiting_.empty() && running_.empty(); }

  // The front group's samples that fit in the free rows; none when nothing
  // waits or no row is free. After it, the caller appends the n sequences to
  // running() and calls admitted().
  std::optional<Admission> next_admission() const;
  // The front group's first `n` samples are running.
  void admitted(int64_t n);

  std::vector<Sequence>& running() { return running_; }
  std::deque<Group>& waiting() { return waiting_; }
  // Moves finished sequences out of the batch (their results to finished())
  // and keeps the running rows contiguous in the cache.
  void compact();
  // The results of the sequences finished since the last take.
  std::vector<GeneratedSequence> take_finished();
  // Drops everything (waiting, running, finished) and the cache's shared prompts.
  void clear();

 private:
  KVCache& cache_;
  std::deque<Group> waiting_;
  std::vector<Sequence> running_;
  std::vector<GeneratedSequence> finished_;
};

}  // namespace rlf::rollout

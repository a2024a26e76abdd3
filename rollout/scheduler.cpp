#include "rollout/scheduler.h"

#include <algorithm>

namespace rlf::rollout {

std::optional<Scheduler::Admission> Scheduler::next_admission() const {
  const int64_t free_rows = cache_.n_rows() - static_cast<int64_t>(running_.size());
  if (waiting_.empty() || free_rows <= 0) return std::nullopt;
  const Group& g = waiting_.front();
  return Admission{g, static_cast<int64_t>(running_.size()), std::min(g.count, free_rows)};
}

void Scheduler::admitted(int64_t n) {
  Group& g = waiting_.front();
  g.first += n;
  g.count -= n;
  if (g.count == 0) waiting_.pop_front();
}

void Scheduler::compact() {
  // Fill each finished row's slot with the last live row (one cache copy each).
  std::vector<Sequence>& rows = running_;
  size_t i = 0;
  while (i < rows.size()) {
    if (!rows[i].finished) {
      ++i;
      continue;
    }
    finished_.push_back(rows[i].release());
    while (rows.size() > i + 1 && rows.back().finished) {
      finished_.push_back(rows.back().release());
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

std::vector<GeneratedSequence> Scheduler::take_finished() {
  std::vector<GeneratedSequence> out = std::move(finished_);
  finished_.clear();
  return out;
}

void Scheduler::clear() {
  running_.clear();
  cache_.release_rows(0);
  waiting_.clear();
  finished_.clear();
}

}  // namespace rlf::rollout

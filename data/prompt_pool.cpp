// Per-prompt curation statistics and the skipping draw (see prompt_pool.h).
#include "data/prompt_pool.h"

#include <cmath>

#include "util/error.h"
#include "util/hash.h"

namespace rlf {

namespace {
constexpr const char* kPoolFormat = "rlf.prompt_pool";
constexpr int kPoolVersion = 1;
}  // namespace

void PromptPoolOptions::validate() const {
  check(pass_low >= 0 && pass_low <= 1, "curation.pool_pass_low must be in [0, 1] (got ", pass_low, ")");
  check(pass_high >= 0 && pass_high <= 1, "curation.pool_pass_high must be in [0, 1] (got ", pass_high, ")");
  check(pass_low < pass_high, "curation.pool_pass_low (", pass_low, ") must be below curation.pool_pass_high (",
        pass_high, "): otherwise every prompt is parked");
  check(revisit_after >= 1, "curation.pool_revisit_after must be >= 1 step (got ", revisit_after, ")");
  check(reward_disagreement >= 0, "curation.reward_disagreement must be >= 0 (got ", reward_disagreement, "; 0 = off)");
  check(drop_after >= 0, "curation.drop_disagreeing_after must be >= 0 (got ", drop_after, "; 0 = report only)");
  check(drop_after == 0 || reward_disagreement > 0, "curation.drop_disagreeing_after = ", drop_after,
        " needs curation.reward_disagreement > 0 (the threshold that makes a disagreement)");
}

PromptPool::PromptPool(const std::vector<std::string>& ids, const PromptPoolOptions& options)
    : ids_(ids), options_(options), entries_(ids.size()) {
  options_.validate();
  check(!ids_.empty(), "prompt pool: no training prompts");
  std::string all;
  for (const std::string& id : ids_) all += id + '\x1f';
  fingerprint_ = fnv1a64_hex(all);
}

bool PromptPool::parked(size_t i, int64_t step) const { return options_.difficulty && step < entries_[i].parked_until; }
bool PromptPool::dropped(size_t i) const { return entries_[i].dropped; }

int64_t PromptPool::n_parked(int64_t step) const {
  int64_t n = 0;
  for (size_t i = 0; i < entries_.size(); ++i) n += parked(i, step) && !dropped(i);
  return n;
}

int64_t PromptPool::n_dropped() const {
  int64_t n = 0;
  for (const Entry& e : entries_) n += e.dropped;
  return n;
}

std::vector<size_t> PromptPool::draw(DataCursor& cursor, size_t n, int64_t step, PoolDrawStats& stats) const {
  check(cursor.n_items() == entries_.size(), "prompt pool: the cursor has ", cursor.n_items(), " items, the pool ",
        entries_.size());
  std::vector<size_t> out;
  size_t skipped_in_a_row = 0;
  while (out.size() < n) {
    const size_t i = cursor.next();
    const bool skip = parked(i, step) || dropped(i);
    if (skip && skipped_in_a_row < entries_.size()) {
      ++stats.n_skipped, ++skipped_in_a_row;
      continue;
    }
    if (skip) ++stats.n_forced;
    skipped_in_a_row = 0;
    out.push_back(i);
  }
  return out;
}

bool PromptPool::record(size_t i, const PromptOutcome& o, int64_t step) {
  check(i < entries_.size(), "prompt pool: index ", i, " is beyond its ", entries_.size(), " prompts");
  Entry& e = entries_[i];
  ++e.visits;
  e.n_correct = o.n_correct, e.n_judged = o.n_judged;
  if (o.n_judged > 0) {
    const double p = static_cast<double>(o.n_correct) / static_cast<double>(o.n_judged);
    const bool extreme = p <= options_.pass_low || p >= options_.pass_high;
    e.parked_until = extreme ? step + 1 + options_.revisit_after : 0;
  }
  bool disagree = false;
  if (options_.reward_disagreement > 0 && o.reward_checked) {
    ++e.n_checked;
    e.last_gap = std::abs(o.trained_mean - o.gold_mean);
    disagree = e.last_gap > options_.reward_disagreement;
    e.n_disagree += disagree;
    if (options_.drop_after > 0 && e.n_disagree >= options_.drop_after) e.dropped = true;
  }
  return disagree;
}

Json PromptPool::state() const {
  Json prompts = Json::array();
  for (size_t i = 0; i < entries_.size(); ++i) {
    const Entry& e = entries_[i];
    if (e.visits == 0) continue;
    prompts.push_back(Json::array({i, e.visits, e.n_correct, e.n_judged, e.parked_until, e.n_checked, e.n_disagree,
                                   e.dropped, e.last_gap}));
  }
  return {{"format", kPoolFormat}, {"version", kPoolVersion}, {"n_items", entries_.size()}, {"fingerprint", fingerprint_},
          {"prompts", prompts}};
}

void PromptPool::restore(const Json& s, const std::string& src) {
  check(s.is_object(), src, ": not an object");
  check(json_require<std::string>(s, "format", src) == kPoolFormat, src, ": field 'format' is not \"", kPoolFormat, "\"");
  const int version = json_require<int>(s, "version", src);
  check(version == kPoolVersion, src, ": version ", version, " is not supported (expected ", kPoolVersion, ")");
  const auto n_items = json_require<uint64_t>(s, "n_items", src);
  check(n_items == entries_.size(), src, ": saved for ", n_items, " training prompts, this run has ", entries_.size(),
        "; resume with the same dataset and [curation] options");
  check(json_require<std::string>(s, "fingerprint", src) == fingerprint_, src,
        ": saved for other training prompts (their ids differ); resume with the same dataset and [curation] options");
  std::vector<Entry> entries(entries_.size());
  const Json& prompts = s.at("prompts");
  check(prompts.is_array(), src, ": 'prompts' is not an array");
  for (const Json& p : prompts) {
    check(p.is_array() && p.size() == 9, src, ": a prompt entry is not [index, visits, correct, judged, "
          "parked_until, n_checked, n_disagree, dropped, last_gap] (got ", p.dump(), ")");
    const auto i = p[0].get<uint64_t>();
    check(i < entries.size(), src, ": prompt index ", i, " is beyond the ", entries.size(), " prompts");
    Entry& e = entries[i];
    e.visits = p[1].get<int64_t>(), e.n_correct = p[2].get<int64_t>(), e.n_judged = p[3].get<int64_t>();
    e.parked_until = p[4].get<int64_t>(), e.n_checked = p[5].get<int64_t>(), e.n_disagree = p[6].get<int64_t>();
    e.dropped = p[7].get<bool>(), e.last_gap = p[8].get<double>();
  }
  entries_ = std::move(entries);
}

Json PromptPool::report(int64_t step) const {
  Json prompts = Json::array();
  int64_t n_visited = 0, n_disagreeing = 0;
  for (size_t i = 0; i < entries_.size(); ++i) {
    const Entry& e = entries_[i];
    if (e.visits == 0) continue;
    ++n_visited;
    n_disagreeing += e.n_disagree > 0;
    Json p = {{"index", i}, {"id", ids_[i]}, {"visits", e.visits}};
    if (options_.difficulty) {
      p["pass_rate"] = e.n_judged > 0 ? Json(static_cast<double>(e.n_correct) / static_cast<double>(e.n_judged))
                                      : Json(nullptr);
      p["parked_until_step"] = e.parked_until;
    }
    if (options_.reward_disagreement > 0) {
      p["reward_checks"] = e.n_checked;
      p["disagreements"] = e.n_disagree;
      p["last_gap"] = e.last_gap;
      p["dropped"] = e.dropped;
    }
    prompts.push_back(std::move(p));
  }
  return {{"format", "rlf.prompt_pool_report"},
          {"step", step},
          {"difficulty_pool", options_.difficulty},
          {"pool_pass_low", options_.pass_low},
          {"pool_pass_high", options_.pass_high},
          {"pool_revisit_after", options_.revisit_after},
          {"reward_disagreement", options_.reward_disagreement},
          {"drop_disagreeing_after", options_.drop_after},
          {"n_prompts", entries_.size()},
          {"n_visited", n_visited},
          {"n_parked", n_parked(step)},
          {"n_disagreeing", n_disagreeing},
          {"n_dropped", n_dropped()},
          {"prompts", prompts}};
}

}  // namespace rlf

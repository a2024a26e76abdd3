// BPE model (see bpe_model.h). The merge loop follows tokenizers'
// Word::merge_all: a min-heap of (rank, position) candidates over a linked list
// of symbols, stale entries skipped lazily; O(n log n) per word, so a long
// un-pre-tokenized text (SentencePiece-style tokenizers) stays fast.
#include "tokenizer/bpe_model.h"

#include <cstdio>
#include <queue>

#include "tokenizer/unicode_text.h"
#include "util/error.h"

namespace rlf {

namespace {

// Largest token id accepted (guards against absurd ids in corrupt files).
constexpr int64_t kMaxTokenId = 1 << 24;

std::optional<std::string> optional_string(const Json& model, const char* key, const std::string& where) {
  auto it = model.find(key);
  if (it == model.end() || it->is_null()) return std::nullopt;
  check(it->is_string(), where, ": field 'model.", key, "' must be a string or null, got ", it->type_name());
  return it->get<std::string>();
}

bool optional_bool(const Json& model, const char* key, bool fallback, const std::string& where) {
  auto it = model.find(key);
  if (it == model.end() || it->is_null()) return fallback;
  check(it->is_boolean(), where, ": field 'model.", key, "' must be a boolean, got ", it->type_name());
  return it->get<bool>();
}

}  // namespace

BpeModel::BpeModel(const Json& model, const std::string& where) {
  std::fill(std::begin(byte_ids_), std::end(byte_ids_), -1);
  auto vocab_it = model.find("vocab");
  check(vocab_it != model.end() && vocab_it->is_object(), where,
        ": field 'model.vocab' must be an object mapping token strings to ids");
  int64_t max_id = -1;
  vocab_.reserve(vocab_it->size());
  for (auto it = vocab_it->begin(); it != vocab_it->end(); ++it) {
    check(it.value().is_number_integer(), where, ": field 'model.vocab' entry '", it.key(),
          "' must be an integer id, got ", it.value().type_name());
    int64_t id = it.value().get<int64_t>();
    check(id >= 0 && id < kMaxTokenId, where, ": field 'model.vocab' entry '", it.key(), "' has id ", id,
          " outside [0, ", kMaxTokenId, ")");
    vocab_[it.key()] = static_cast<int32_t>(id);
    max_id = std::max(max_id, id);
  }
  id_to_token_.assign(static_cast<size_t>(max_id + 1), std::string());
  has_id_.assign(static_cast<size_t>(max_id + 1), false);
  for (const auto& [tok, id] : vocab_) {
    id_to_token_[id] = tok;
    has_id_[id] = true;
  }

  if (auto unk = optional_string(model, "unk_token", where)) {
    auto it = vocab_.find(*unk);
    check(it != vocab_.end(), where, ": field 'model.unk_token' is '", *unk, "', which is not in model.vocab");
    unk_id_ = it->second;
  }
  continuing_subword_prefix_ = optional_string(model, "continuing_subword_prefix", where).value_or("");
  end_of_word_suffix_ = optional_string(model, "end_of_word_suffix", where).value_or("");
  fuse_unk_ = optional_bool(model, "fuse_unk", false, where);
  byte_fallback_ = optional_bool(model, "byte_fallback", false, where);
  ignore_merges_ = optional_bool(model, "ignore_merges", false, where);
  auto dropout = model.find("dropout");
  check(dropout == model.end() || dropout->is_null() || (dropout->is_number() && dropout->get<double>() == 0.0),
        where, ": field 'model.dropout' is set; BPE dropout is not supported (use null)");
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof(name), "<0x%02X>", b);
    if (auto it = vocab_.find(name); it != vocab_.end()) byte_ids_[b] = it->second;
  }

  const std::string marker = "\xE2\x96\x81";  // U+2581
  if (vocab_.count(marker)) {
    bool safe = true;
    for (const auto& [tok, id] : vocab_) {
      for (size_t p = tok.find(marker, 1); safe && p != std::string::npos; p = tok.find(marker, p + 1))
        if (p < marker.size() || tok.compare(p - marker.size(), marker.size(), marker) != 0) safe = false;
      if (!safe) break;
    }
    if (safe) chunk_marker_ = marker;
  }

  auto merges_it = model.find("merges");
  check(merges_it != model.end() && merges_it->is_array(), where, ": field 'model.merges' must be an array");
  merges_.reserve(merges_it->size() * 2);
  auto lookup = [&](const std::string& tok, size_t rank) {
    auto it = vocab_.find(tok);
    check(it != vocab_.end(), where, ": field 'model.merges' entry ", rank, " uses '", tok,
          "', which is not in model.vocab");
    return it->second;
  };
  int32_t rank = 0;
  for (const Json& m : *merges_it) {
    std::string a, b;
    if (m.is_string()) {
      const std::string& line = m.get_ref<const std::string&>();
      if (line.rfind("#version", 0) == 0) continue;
      size_t sp = line.find(' ');
      check(sp != std::string::npos && line.find(' ', sp + 1) == std::string::npos, where, ": field 'model.merges' entry ",
            rank, " ('", line, "') must be two tokens separated by one space");
      a = line.substr(0, sp);
      b = line.substr(sp + 1);
    } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
      a = m[0].get<std::string>();
      b = m[1].get<std::string>();
    } else {
      fail(where, ": field 'model.merges' entry ", rank, " must be \"a b\" or [\"a\", \"b\"], got ", m.dump());
    }
    check(b.size() >= continuing_subword_prefix_.size(), where, ": field 'model.merges' entry ", rank,
          " is shorter than model.continuing_subword_prefix");
    int32_t a_id = lookup(a, rank), b_id = lookup(b, rank);
    int32_t new_id = lookup(a + b.substr(continuing_subword_prefix_.size()), rank);
    merges_.insert_or_assign(pair_key(a_id, b_id), Merge{rank, new_id});  // a later duplicate wins, as in tokenizers
    ++rank;
  }
}

std::optional<int32_t> BpeModel::token_to_id(std::string_view token) const {
  auto it = vocab_.find(std::string(token));
  if (it == vocab_.end()) return std::nullopt;
  return it->second;
}

const std::string* BpeModel::id_to_token(int32_t id) const {
  if (id < 0 || id >= vocab_size() || !has_id_[id]) return nullptr;
  return &id_to_token_[id];
}

void BpeModel::tokenize(std::string_view word, std::vector<int32_t>& out) const {
  if (chunk_marker_.empty()) return tokenize_chunk(word, out);
  const std::string& m = chunk_marker_;
  size_t start = 0;
  for (size_t p = word.find(m, 1); p != std::string_view::npos; p = word.find(m, p + m.size())) {
    bool after_marker = p >= start + m.size() && word.compare(p - m.size(), m.size(), m) == 0;
    if (after_marker || p == start) continue;
    tokenize_chunk(word.substr(start, p - start), out);
    start = p;
  }
  tokenize_chunk(word.substr(start), out);
}

void BpeModel::tokenize_chunk(std::string_view word, std::vector<int32_t>& out) const {
  if (word.empty()) return;
  if (ignore_merges_) {
    if (auto it = vocab_.find(std::string(word)); it != vocab_.end()) {
      out.push_back(it->second);
      return;
    }
  }
  bool cacheable = word.size() < kCacheMaxWordBytes;
  std::string key;
  if (cacheable) {
    key.assign(word);
    std::lock_guard<std::mutex> lock(cache_mutex_);
    if (auto it = cache_.find(key); it != cache_.end()) {
      out.insert(out.end(), it->second.begin(), it->second.end());
      return;
    }
  }
  size_t first = out.size();
  merge_word(word, out);
  if (cacheable) {
    std::lock_guard<std::mutex> lock(cache_mutex_);
    if (cache_.size() < kCacheCapacity) cache_.emplace(std::move(key), std::vector<int32_t>(out.begin() + first, out.end()));
  }
}

void BpeModel::merge_word(std::string_view word, std::vector<int32_t>& out) const {
  struct Symbol {
    int32_t id;
    int32_t prev, next;
    bool alive;
  };
  std::vector<Symbol> symbols;
  symbols.reserve(word.size());
  auto add = [&](int32_t id) {
    int32_t n = static_cast<int32_t>(symbols.size());
    symbols.push_back({id, n - 1, -1, true});
    if (n > 0) symbols[n - 1].next = n;
  };

  // The unk id waiting to be added (fuse_unk merges a run of unknowns); -1: none.
  int32_t pending_unk = -1;
  const int32_t unk = unk_id_.value_or(-1);
  std::string piece;
  size_t pos = 0;
  while (pos < word.size()) {
    size_t len = unicode::utf8_seq_len(static_cast<unsigned char>(word[pos]));
    if (pos + len > word.size()) len = word.size() - pos;
    bool is_first = pos == 0, is_last = pos + len == word.size();
    piece.clear();
    if (!is_first) piece += continuing_subword_prefix_;
    piece.append(word.substr(pos, len));
    if (is_last) piece += end_of_word_suffix_;
    pos += len;
    if (auto it = vocab_.find(piece); it != vocab_.end()) {
      if (pending_unk >= 0) {
        add(pending_unk);
        pending_unk = -1;
      }
      add(it->second);
      continue;
    }
    if (byte_fallback_) {
      bool all = true;
      for (char c : piece) all = all && byte_ids_[static_cast<unsigned char>(c)] >= 0;
      if (all) {
        for (char c : piece) add(byte_ids_[static_cast<unsigned char>(c)]);
        continue;
      }
    }
    if (pending_unk < 0) {
      pending_unk = unk;
    } else if (!fuse_unk_) {
      add(pending_unk);
      pending_unk = unk;
    }
  }
  if (pending_unk >= 0) add(pending_unk);

  struct Candidate {
    int32_t rank;
    int32_t pos;
    int32_t new_id;
    bool operator<(const Candidate& o) const {  // max-heap: lowest rank, then lowest position on top
      return rank != o.rank ? rank > o.rank : pos > o.pos;
    }
  };
  auto find_merge = [&](int32_t a, int32_t b) -> const Merge* {
    auto it = merges_.find(pair_key(a, b));
    return it == merges_.end() ? nullptr : &it->second;
  };
  std::vector<Candidate> heap_storage;
  heap_storage.reserve(symbols.size());
  std::priority_queue<Candidate> queue(std::less<Candidate>(), std::move(heap_storage));
  for (size_t i = 0; i + 1 < symbols.size(); ++i)
    if (const Merge* m = find_merge(symbols[i].id, symbols[i + 1].id))
      queue.push({m->rank, static_cast<int32_t>(i), m->new_id});

  while (!queue.empty()) {
    Candidate top = queue.top();
    queue.pop();
    Symbol& cur = symbols[top.pos];
    if (!cur.alive || cur.next < 0) continue;
    Symbol& right = symbols[cur.next];
    const Merge* m = find_merge(cur.id, right.id);
    if (!m || m->new_id != top.new_id) continue;
    cur.id = top.new_id;
    right.alive = false;
    cur.next = right.next;
    if (cur.next >= 0) symbols[cur.next].prev = top.pos;
    if (cur.prev >= 0)
      if (const Merge* pm = find_merge(symbols[cur.prev].id, cur.id)) queue.push({pm->rank, cur.prev, pm->new_id});
    if (cur.next >= 0)
      if (const Merge* nm = find_merge(cur.id, symbols[cur.next].id)) queue.push({nm->rank, top.pos, nm->new_id});
  }
  for (const Symbol& s : symbols)
    if (s.alive) out.push_back(s.id);
}

}  // namespace rlf

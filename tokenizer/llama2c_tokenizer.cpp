// llama2.c tokenizer (see llama2c_tokenizer.h).
#include "tokenizer/llama2c_tokenizer.h"

#include <cstring>
#include <queue>

#include "tokenizer/unicode_text.h"
#include "util/error.h"
#include "util/fs.h"

namespace rlf {

Llama2cTokenizer::Llama2cTokenizer(const std::filesystem::path& path) {
  file_ = "llama2.c tokenizer '" + path.string() + "'";
  name_ = path.stem().string();
  std::string data = read_file(path);
  size_t pos = 0;
  auto read_i32 = [&](const char* what, size_t token) {
    check(pos + 4 <= data.size(), file_, ": truncated at byte ", pos, " while reading the ", what, " of token ", token,
          " (file size ", data.size(), ")");
    int32_t v;
    std::memcpy(&v, data.data() + pos, 4);
    pos += 4;
    return v;
  };
  check(data.size() >= 4, file_, ": file is ", data.size(), " bytes, too short for the header (int32 max_token_length)");
  std::memcpy(&max_token_length_, data.data(), 4);
  pos = 4;
  check(max_token_length_ > 0 && max_token_length_ <= 4096, file_, ": header max_token_length is ", max_token_length_,
        ", expected 1..4096 (is this a llama2.c tokenizer file?)");
  while (pos < data.size()) {
    size_t token = vocab_.size();
    check(token < (1u << 24), file_, ": more than 2^24 tokens; corrupt file");
    float score;
    check(pos + 4 <= data.size(), file_, ": truncated at byte ", pos, " while reading the score of token ", token);
    std::memcpy(&score, data.data() + pos, 4);
    pos += 4;
    int32_t len = read_i32("length", token);
    check(len >= 0 && len <= max_token_length_ * 4 + 16, file_, ": token ", token, " has length ", len,
          " (max_token_length is ", max_token_length_, "); corrupt file");
    check(pos + static_cast<size_t>(len) <= data.size(), file_, ": truncated at byte ", pos, " inside token ", token,
          " (needs ", len, " bytes, ", data.size() - pos, " left)");
    vocab_.emplace_back(data.substr(pos, len));
    scores_.push_back(score);
    pos += len;
  }
  std::string fname = path.filename().string();
  std::string digits = fname.size() > 7 ? fname.substr(3, fname.size() - 7) : "";
  bool named_count = fname.rfind("tok", 0) == 0 && fname.size() > 7 && fname.compare(fname.size() - 4, 4, ".bin") == 0 &&
                     digits.size() <= 9 && digits.find_first_not_of("0123456789") == std::string::npos;
  if (named_count) {
    size_t expected = std::stoul(digits);
    check(vocab_.size() == expected, file_, ": holds ", vocab_.size(), " tokens but its name says ", expected,
          "; the file is truncated or corrupt");
  }
  check(vocab_.size() >= 256 + kByteOffset, file_, ": holds ", vocab_.size(),
        " tokens; a llama2.c vocabulary needs at least 259 (unk, bos, eos and 256 byte tokens)");
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof(name), "<0x%02X>", b);
    check(vocab_[b + kByteOffset] == name, file_, ": token ", b + kByteOffset, " is '", vocab_[b + kByteOffset],
          "', expected the byte token '", name, "'");
  }
  for (size_t i = 0; i < vocab_.size(); ++i) ids_.emplace(vocab_[i], static_cast<int32_t>(i));
}

std::optional<int32_t> Llama2cTokenizer::lookup(const std::string& s) const {
  auto it = ids_.find(s);
  if (it == ids_.end()) return std::nullopt;
  return it->second;
}

void Llama2cTokenizer::check_id(int32_t id) const {
  check(id >= 0 && id < vocab_size(), file_, ": id ", id, " is outside the vocabulary [0, ", vocab_size(), ")");
}

std::vector<int32_t> Llama2cTokenizer::encode(std::string_view text, bool add_special) const {
  std::vector<int32_t> tokens;
  if (add_special) tokens.push_back(kBos);
  if (!text.empty()) {
    auto prefix = lookup(" ");
    check(prefix.has_value(), file_, ": the vocabulary has no \" \" token for the dummy prefix");
    tokens.push_back(*prefix);
  }
  // Characters (run.c groups a lead byte with up to 3 continuation bytes).
  std::string buf;
  for (size_t i = 0; i < text.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(text[i]);
    if ((c & 0xC0) != 0x80) buf.clear();
    buf += static_cast<char>(c);
    bool next_is_cont = i + 1 < text.size() && (static_cast<unsigned char>(text[i + 1]) & 0xC0) == 0x80;
    if (next_is_cont && buf.size() < 4) continue;
    if (auto id = lookup(buf)) {
      tokens.push_back(*id);
    } else {
      for (char b : buf) tokens.push_back(static_cast<unsigned char>(b) + kByteOffset);
    }
    buf.clear();
  }

  // Merge the best-scoring pair until none is left: a heap of candidates
  // (score desc, position asc) over a linked list, equivalent to run.c's
  // rescans but O(n log n). Include the BOS token as run.c does.
  size_t n = tokens.size();
  std::vector<int32_t> next(n), prev(n);
  std::vector<uint32_t> version(n, 0);
  std::vector<bool> alive(n, true);
  for (size_t i = 0; i < n; ++i) {
    next[i] = i + 1 < n ? static_cast<int32_t>(i + 1) : -1;
    prev[i] = static_cast<int32_t>(i) - 1;
  }
  struct Candidate {
    float score;
    int32_t left, right;
    uint32_t left_version, right_version;
    int32_t id;
    bool operator<(const Candidate& o) const { return score != o.score ? score < o.score : left > o.left; }
  };
  std::priority_queue<Candidate> queue;
  std::string pair;
  auto push = [&](int32_t l, int32_t r) {
    if (l < 0 || r < 0) return;
    pair = vocab_[tokens[l]];
    pair += vocab_[tokens[r]];
    auto id = lookup(pair);
    if (id && scores_[*id] > -1e10f) queue.push({scores_[*id], l, r, version[l], version[r], *id});
  };
  for (size_t i = 0; i + 1 < n; ++i) push(static_cast<int32_t>(i), static_cast<int32_t>(i + 1));
  while (!queue.empty()) {
    Candidate c = queue.top();
    queue.pop();
    if (!alive[c.left] || !alive[c.right] || next[c.left] != c.right || version[c.left] != c.left_version ||
        version[c.right] != c.right_version)
      continue;
    tokens[c.left] = c.id;
    ++version[c.left];
    alive[c.right] = false;
    next[c.left] = next[c.right];
    if (next[c.left] >= 0) prev[next[c.left]] = c.left;
    push(prev[c.left], c.left);
    push(c.left, next[c.left]);
  }
  std::vector<int32_t> out;
  out.reserve(n + 1);
  for (size_t i = 0; i < n; ++i)
    if (alive[i]) out.push_back(tokens[i]);
  // add_special adds BOS only, as run.c's generate() encodes prompts (bos=1,
  // eos=0) and as Llama tokenizers do (add_bos_token, not add_eos_token).
  return out;
}

std::string Llama2cTokenizer::token_bytes(int32_t id) const {
  check_id(id);
  const std::string& piece = vocab_[id];
  if (id >= kByteOffset && id < kByteOffset + 256) return std::string(1, static_cast<char>(id - kByteOffset));
  return piece;
}

std::string Llama2cTokenizer::decode(std::span<const int32_t> ids, bool skip_special) const {
  std::string out;
  int32_t prev = -1;
  for (size_t i = 0; i < ids.size(); ++i) {
    int32_t id = ids[i];
    check_id(id);
    if (!(skip_special && is_special(id))) {
      std::string piece = token_bytes(id);
      bool strip = (prev == -1 || prev == kBos) && !vocab_[id].empty() && vocab_[id][0] == ' ';
      if (strip) piece.erase(0, 1);
      out += piece;
    }
    prev = id;
  }
  return unicode::from_utf8_lossy(out);
}

std::string Llama2cTokenizer::token_string(int32_t id) const {
  check_id(id);
  return vocab_[id];
}

std::optional<int32_t> Llama2cTokenizer::token_to_id(std::string_view token) const { return lookup(std::string(token)); }

float Llama2cTokenizer::score(int32_t id) const {
  check_id(id);
  return scores_[static_cast<size_t>(id)];
}

}  // namespace rlf

// The BPE model of a Hugging Face tokenizer.json ("model": {"type": "BPE"}):
// vocabulary, merges by rank, byte fallback, unk token, optional subword
// prefix/suffix, `ignore_merges`, and a per-word cache. tokenize() produces
// exactly the ids of tokenizers' BPE::tokenize for one pre-tokenized word.
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "util/json_util.h"

namespace rlf {

class BpeModel {
 public:
  // Parses the "model" object. `where` names the file for errors
  // ("tokenizer.json 'path'"); fields are reported as model.<name>.
  BpeModel(const Json& model, const std::string& where);

  // Appends the ids of `word` (one pre-token, valid UTF-8) to `out`.
  void tokenize(std::string_view word, std::vector<int32_t>& out) const;

  std::optional<int32_t> token_to_id(std::string_view token) const;
  // The vocabulary string of `id`, or nullptr when the model has no such id.
  const std::string* id_to_token(int32_t id) const;
  // One more than the largest id in the vocabulary.
  int32_t vocab_size() const { return static_cast<int32_t>(id_to_token_.size()); }

 private:
  struct Merge {
    int32_t rank;
    int32_t new_id;
  };
  static uint64_t pair_key(int32_t a, int32_t b) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
  }
  void tokenize_chunk(std::string_view word, std::vector<int32_t>& out) const;
  void merge_word(std::string_view word, std::vector<int32_t>& out) const;

  std::unordered_map<std::string, int32_t> vocab_;
  std::vector<std::string> id_to_token_;  // "" for ids not in the vocabulary
  std::vector<bool> has_id_;
  std::unordered_map<uint64_t, Merge> merges_;
  std::optional<int32_t> unk_id_;
  std::string continuing_subword_prefix_;
  std::string end_of_word_suffix_;
  bool fuse_unk_ = false;
  bool byte_fallback_ = false;
  bool ignore_merges_ = false;
  int32_t byte_ids_[256];  // ids of "<0xNN>", -1 when missing
  // "▁" when no vocabulary token has a "▁" right after another character.
  // Then no merge can cross the point before such a "▁", and a long word (a
  // whole SentencePiece-style text) is split there into independent, cacheable
  // chunks with identical results.
  std::string chunk_marker_;

  // Word -> ids cache (words shorter than kCacheMaxWordBytes, at most
  // kCacheCapacity entries, as tokenizers' default cache).
  static constexpr size_t kCacheCapacity = 10000;
  static constexpr size_t kCacheMaxWordBytes = 256;
  mutable std::mutex cache_mutex_;
  mutable std::unordered_map<std::string, std::vector<int32_t>> cache_;
};

}  // namespace rlf

// The llama2.c tokenizer (tok*.bin): a SentencePiece vocabulary exported as
// int32 max_token_length, then per token: float32 score, int32 length, bytes.
// Encoding reproduces llama2.c's run.c: a dummy " " prefix, UTF-8 characters
// looked up one by one (unknown ones fall back to byte tokens, id = byte + 3),
// then repeatedly the adjacent pair whose concatenation has the highest score
// is merged (the leftmost on ties). BOS = 1, EOS = 2; encode(add_special)
// prepends BOS only, as run.c does for prompts. Decoding strips the
// leading space of the first token and of a token after BOS, and turns
// "<0xNN>" into the byte, as run.c's decode() does.
#pragma once

#include <filesystem>
#include <string>
#include <unordered_map>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace rlf {

class Llama2cTokenizer : public Tokenizer {
 public:
  // Loads `path`. When the file name is tok<N>.bin, exactly N tokens are
  // expected (a file cut at a token boundary is otherwise undetectable).
  explicit Llama2cTokenizer(const std::filesystem::path& path);

  std::vector<int32_t> encode(std::string_view text, bool add_special = false) const override;
  std::string decode(std::span<const int32_t> ids, bool skip_special = false) const override;
  std::string token_string(int32_t id) const override;
  std::string token_bytes(int32_t id) const override;
  std::optional<int32_t> token_to_id(std::string_view token) const override;
  int32_t vocab_size() const override { return static_cast<int32_t>(vocab_.size()); }
  std::optional<int32_t> bos_id() const override { return kBos; }
  std::optional<int32_t> eos_id() const override { return kEos; }
  bool is_special(int32_t id) const override { return id == kUnk || id == kBos || id == kEos; }
  std::string name() const override { return name_; }
  float score(int32_t id) const;  // the SentencePiece merge score of `id`

  static constexpr int32_t kUnk = 0, kBos = 1, kEos = 2;
  static constexpr int32_t kByteOffset = 3;  // id of byte b is b + 3

 private:
  std::optional<int32_t> lookup(const std::string& s) const;
  void check_id(int32_t id) const;

  std::string file_;  // "llama2.c tokenizer '<path>'" for errors
  std::string name_;
  std::vector<std::string> vocab_;
  std::vector<float> scores_;
  std::unordered_map<std::string, int32_t> ids_;  // first id of each string
  int32_t max_token_length_ = 0;
};

}  // namespace rlf

// The tokenizer interface every model uses: text <-> ids, special tokens, and
// streaming decode. Implementations: Hugging Face tokenizer.json (byte-level BPE
// and SentencePiece-style BPE) and llama2.c tok*.bin. Load with load_tokenizer().
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace rlf {

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;

  // Encodes `text`. Added/special tokens that appear in the text are matched
  // first and never split. With `add_special`, BOS/EOS (or whatever the
  // tokenizer's own post-processor adds) are added exactly as the reference does.
  virtual std::vector<int32_t> encode(std::string_view text, bool add_special = false) const = 0;

  // Decodes ids to text (byte fallback and byte-level bytes reassembled).
  // With `skip_special`, special tokens are dropped.
  virtual std::string decode(std::span<const int32_t> ids, bool skip_special = false) const = 0;

  // The token's string as stored in the vocabulary (e.g. "Ġthe", "▁the", "<0x0A>").
  virtual std::string token_string(int32_t id) const = 0;

  // The raw bytes this token contributes to decoded text when it follows
  // another token (no leading-space stripping); used by streaming decode.
  virtual std::string token_bytes(int32_t id) const = 0;

  // Id of a token string, if in the vocabulary or the added tokens.
  virtual std::optional<int32_t> token_to_id(std::string_view token) const = 0;

  virtual int32_t vocab_size() const = 0;
  virtual std::optional<int32_t> bos_id() const = 0;
  virtual std::optional<int32_t> eos_id() const = 0;
  virtual bool is_special(int32_t id) const = 0;

  // The Jinja chat template from tokenizer_config.json ("" when none); see
  // chat_template.h for rendering.
  virtual std::string chat_template() const { return {}; }
  // A short name for reports (the model directory or file stem).
  virtual std::string name() const { return {}; }
};

// Loads a tokenizer from a tokenizer.json file, a directory holding
// tokenizer.json (and tokenizer_config.json for BOS/EOS and the chat template),
// or a llama2.c tok*.bin. Throws rlf::Error naming the file and field.
std::unique_ptr<Tokenizer> load_tokenizer(const std::string& path);

// transformers' clean_up_tokenization (applied by its decode() when
// tokenizer_config.json has clean_up_tokenization_spaces: true): removes the
// space before . ? ! , and English contractions. Lossy; rlf's decode() does
// not apply it.
std::string clean_up_tokenization_spaces(std::string_view text);

// Incremental decoder for streaming: feed ids one at a time, get back only the
// complete UTF-8 text that became available (partial multi-byte characters are
// held back until completed). The concatenation of every push() and finish()
// equals tok.decode(all ids, skip_special). Works like tokenizers'
// DecodeStream: it decodes a short window that starts with already-emitted
// tokens, so first-token rules (a stripped leading space) apply to the
// window's prefix and its extension alike and cancel out.
class StreamDecoder {
 public:
  explicit StreamDecoder(const Tokenizer& tok, bool skip_special = true);
  // Returns the newly available text after appending `id`.
  std::string push(int32_t id);
  // Returns whatever is held back (invalid trailing bytes become U+FFFD).
  std::string finish();

 private:
  const Tokenizer& tok_;
  bool skip_special_;
  std::vector<int32_t> ids_;  // the window: ids_[0, read_) are already emitted
  size_t read_ = 0;
};

}  // namespace rlf

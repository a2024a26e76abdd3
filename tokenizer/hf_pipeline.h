// The stages of a Hugging Face tokenizer.json around the model, each parsed
// from its JSON object and behaving as the `tokenizers` library does:
//
//   text -> Normalizer -> PreTokenizer (pieces) -> model -> PostProcessor
//   ids  -> tokens -> Decoder chain -> text
//
// Supported types (others are an rlf::Error naming the file and field):
//   normalizer:     Sequence, NFC, NFD, NFKC, NFKD, Lowercase, Replace, Prepend, Strip
//   pre_tokenizer:  Sequence, Split, ByteLevel, Metaspace, Digits, Whitespace, WhitespaceSplit
//   decoder:        Sequence, ByteLevel, Replace, ByteFallback, Fuse, Strip, Metaspace
//   post_processor: Sequence, TemplateProcessing, ByteLevel, RobertaProcessing, BertProcessing
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tokenizer/json_fields.h"

namespace rlf {

// A piece of normalized text on its way to the model. `at_start` is true for
// the piece that begins at offset 0 of the original input (Metaspace's
// prepend_scheme "first" depends on it).
struct PreToken {
  std::string text;
  bool at_start = false;
};

class Normalizer {
 public:
  virtual ~Normalizer() = default;
  virtual void normalize(std::string& text) const = 0;
};

class PreTokenizer {
 public:
  virtual ~PreTokenizer() = default;
  // Splits/transforms every piece in place; empty pieces are dropped.
  virtual void pre_tokenize(std::vector<PreToken>& pieces) const = 0;
};

class Decoder {
 public:
  virtual ~Decoder() = default;
  // tokenizers' Decoder::decode_chain: token strings in, strings out (joined
  // by the caller).
  virtual void decode_chain(std::vector<std::string>& tokens) const = 0;
  // Rewrites one token into the raw bytes it contributes in the middle of a
  // text: no first-token stripping, no UTF-8 repair.
  virtual void token_bytes(std::string& token) const = 0;
};

class PostProcessor {
 public:
  virtual ~PostProcessor() = default;
  // Adds the special tokens of a single sequence (the "single" template).
  virtual void add_special_tokens(std::vector<int32_t>& ids) const = 0;
};

// Looks up a token string (vocabulary or added token) for post-processors.
using TokenLookup = std::function<std::optional<int32_t>(const std::string&)>;

std::unique_ptr<Normalizer> parse_normalizer(const tokjson::Node& node);
std::unique_ptr<PreTokenizer> parse_pre_tokenizer(const tokjson::Node& node);
std::unique_ptr<Decoder> parse_decoder(const tokjson::Node& node);
std::unique_ptr<PostProcessor> parse_post_processor(const tokjson::Node& node, const TokenLookup& lookup);

// A post-processor that wraps a sequence as [bos] ids [eos] (either optional);
// what transformers installs for Llama tokenizers from add_bos/add_eos_token.
std::unique_ptr<PostProcessor> make_bos_eos_processor(std::optional<int32_t> bos, std::optional<int32_t> eos);

// A Replace pattern: {"String": "x"} or {"Regex": "..."}.
class ReplacePattern {
 public:
  explicit ReplacePattern(const tokjson::Node& node);
  ~ReplacePattern();
  std::string replace_all(const std::string& text, const std::string& content) const;

 private:
  std::string literal_;
  std::unique_ptr<class Regex> regex_;
};

}  // namespace rlf

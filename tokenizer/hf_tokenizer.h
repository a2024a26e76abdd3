// A Hugging Face tokenizer.json tokenizer (BPE model only): byte-level BPE
// (GPT-2, Llama 3, Qwen2, SmolLM) and SentencePiece-style BPE with byte
// fallback (Llama 2, Phi-3). Encoding and decoding reproduce the `tokenizers`
// library; BOS/EOS come from tokenizer_config.json (or config.json /
// generation_config.json) next to tokenizer.json, and add_special follows
// transformers (Llama tokenizer classes take add_bos_token/add_eos_token from
// tokenizer_config.json instead of the file's post-processor).
#pragma once

#include <filesystem>
#include <memory>
#include <unordered_map>

#include "tokenizer/added_vocab.h"
#include "tokenizer/bpe_model.h"
#include "tokenizer/hf_pipeline.h"
#include "tokenizer/tokenizer.h"

namespace rlf {

class HfTokenizer : public Tokenizer {
 public:
  // Loads `tokenizer_json`; the configs are read from its directory when present.
  explicit HfTokenizer(const std::filesystem::path& tokenizer_json);

  std::vector<int32_t> encode(std::string_view text, bool add_special = false) const override;
  std::string decode(std::span<const int32_t> ids, bool skip_special = false) const override;
  std::string token_string(int32_t id) const override;
  std::string token_bytes(int32_t id) const override;
  std::optional<int32_t> token_to_id(std::string_view token) const override;
  int32_t vocab_size() const override { return vocab_size_; }
  std::optional<int32_t> bos_id() const override { return bos_id_; }
  std::optional<int32_t> eos_id() const override { return eos_id_; }
  bool is_special(int32_t id) const override;
  std::string chat_template() const override { return chat_template_; }
  std::string name() const override { return name_; }

 private:
  void load_configs(const std::filesystem::path& dir);
  const AddedToken* added_by_id(int32_t id) const;
  // Appends the ids of ordinary text (no added tokens inside) to `out`.
  void encode_piece(std::string_view text, bool at_start, std::vector<int32_t>& out) const;

  std::string file_;  // "tokenizer.json '<path>'" for error messages
  std::string name_;
  std::unique_ptr<BpeModel> model_;
  std::unique_ptr<Normalizer> normalizer_;
  std::unique_ptr<PreTokenizer> pre_tokenizer_;
  std::unique_ptr<Decoder> decoder_;
  std::unique_ptr<PostProcessor> post_processor_;
  std::vector<AddedToken> added_;
  std::unordered_map<int32_t, size_t> added_index_by_id_;
  std::unordered_map<std::string, int32_t> added_id_by_content_;
  AddedTokenMatcher raw_matcher_;         // added tokens with normalized=false
  AddedTokenMatcher normalized_matcher_;  // the others, in normalized form
  int32_t vocab_size_ = 0;
  std::optional<int32_t> bos_id_, eos_id_;
  std::string chat_template_;
};

}  // namespace rlf

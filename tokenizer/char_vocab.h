// A character-level tokenizer that rlf writes itself, for models it builds
// from scratch (the embedded demo, tests): one token per character of an
// alphabet, plus <unk> (0), <s> (1, prepended by encode with add_special) and
// </s> (2, end of text). It is an ordinary Hugging Face tokenizer.json (BPE
// with no merges and no pre-tokenizer), so rlf, `tokenizers` and
// `transformers` load it the same way.
#pragma once

#include <filesystem>
#include <string>

#include "util/json_util.h"

namespace rlf {

// Printable ASCII, space to '~' (95 characters).
std::string printable_ascii();

// tokenizer.json content for `alphabet` (distinct single-byte characters;
// a repeated or non-ASCII character is an error naming it).
Json char_tokenizer_json(const std::string& alphabet);

// Writes tokenizer.json and tokenizer_config.json (bos/eos tokens) into `dir`.
void write_char_tokenizer(const std::filesystem::path& dir, const std::string& alphabet);

}  // namespace rlf

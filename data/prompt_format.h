// Turning a dataset record into the text the model sees:
//   1. prompt_template: "{prompt}" is the record's prompt text; "{name}" is
//      the record's field `name` (strings as they are, other values as JSON).
//      Only "{identifier}" is a placeholder; other braces ("\boxed{}") are
//      literal text.
//   2. chat_template: "" renders no chat markup (the system prompt, if any,
//      goes first followed by a blank line); a format name ("chatml",
//      "qwen2", "llama3", ... see tokenizer/chat_template.h) or "auto" (the
//      format detected from the tokenizer's tokenizer_config.json; none when
//      the tokenizer has no chat template) renders [system,] user and the
//      assistant header, as the model's own template does. Text rendered with
//      a chat format includes the BOS string when the template writes one, so
//      it must be encoded without adding special tokens.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "tokenizer/chat_template.h"
#include "util/json_util.h"

namespace rlf {

class Tokenizer;

// What the tokenizer contributes to rendering: its Jinja chat template (only
// used to detect the format) and its BOS/EOS strings.
struct TokenizerChat {
  std::string jinja_template;  // tokenizer_config.json "chat_template"; "" when none
  std::string bos_token;       // "" when none
  std::string eos_token;       // "" when none
  std::string source;          // where it came from, for messages
};

// From a loaded tokenizer.
TokenizerChat tokenizer_chat_of(const Tokenizer& tok);

// From a tokenizer directory (its tokenizer_config.json) or the
// tokenizer_config.json file itself, without loading the vocabulary.
TokenizerChat read_tokenizer_chat(const std::string& path);

// The chat format whole conversations are rendered with (`rlf serve`, the
// agent proxy): "auto" = the format of the tokenizer's template, or plain
// when it has none (a base model); "none" = nullopt (no chat); else a format
// name. Throws rlf::Error for an unknown name or an unrecognised template.
std::optional<ChatFormat> conversation_format(const std::string& name, const Tokenizer& tok);

struct PromptFormatOptions {
  std::string prompt_template = "{prompt}";  // the user message; see above
  std::string system_prompt;                 // "" = none (qwen2 then adds Qwen's default)
  std::string chat_template;                 // "" = none, "auto", or a format name
};

class PromptFormatter {
 public:
  // Resolves the chat format; "auto" needs `tokenizer` (else throws).
  // Throws rlf::Error for an unknown format name or an unrecognised template.
  explicit PromptFormatter(const PromptFormatOptions& options, const TokenizerChat* tokenizer = nullptr);

  // Step 1: the user message for a record. `where` prefixes errors (a field
  // the template names is missing from the record).
  std::string user_message(const std::string& prompt, const Json& record, const std::string& where) const;

  // Step 2: the whole model input for a user message.
  std::string render(const std::string& user_message) const;

  // The resolved chat format; nullopt = no chat markup.
  std::optional<ChatFormat> chat_format() const { return format_; }

 private:
  PromptFormatOptions options_;
  std::optional<ChatFormat> format_;
  ChatRenderOptions render_;
};

}  // namespace rlf

// Chat formats: render a conversation to the prompt text a model was trained
// on, without a Jinja engine. Each format reproduces what the model's own
// chat template renders for plain messages (no tools):
//   chatml   <|im_start|>role\ncontent<|im_end|>\n ...        (SmolLM2 etc.)
//   qwen2    ChatML, plus Qwen2.5's default system prompt when none is given
//   llama3   <|begin_of_text|><|start_header_id|>role<|end_header_id|>\n\ncontent<|eot_id|>
//   llama31  llama3 with Llama 3.1/3.2's system header ("Cutting Knowledge
//            Date: December 2023\nToday Date: <date>\n\n"), always present
//   llama2   <s>[INST] <<SYS>>\nsystem\n<</SYS>>\n\nuser [/INST] answer </s>
//   phi3     <s><|user|>\ncontent<|end|>\n<|assistant|>\n ...
//   plain    "System: ...\n\nUser: ...\n\nAssistant: ..." (for base models)
// detect_chat_format() recognises a tokenizer_config.json chat_template by
// its distinctive markers.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace rlf {

class Tokenizer;

enum class ChatFormat { Plain, ChatML, Qwen2, Llama3, Llama31, Llama2, Phi3 };

struct ChatMessage {
  std::string role;  // "system", "user" or "assistant"
  std::string content;
};

struct ChatRenderOptions {
  bool add_generation_prompt = true;  // end with the assistant header, ready for generation
  std::string bos_token;              // e.g. "<|begin_of_text|>", "<s>"; "" for none
  std::string eos_token;              // e.g. "</s>" (llama2 closes assistant turns with it)
  std::string date_string = "26 Jul 2024";  // llama31 "Today Date:" (the template's own default)
};

// "plain", "chatml", "qwen2", "llama3", "llama31", "llama2", "phi3"
// (also "qwen", "qwen2.5", "llama3.1", "llama3.2"); throws rlf::Error listing them.
ChatFormat parse_chat_format(std::string_view name);
std::string chat_format_name(ChatFormat format);

// The format whose markers `jinja_template` contains, or nullopt.
std::optional<ChatFormat> detect_chat_format(std::string_view jinja_template);

// Options with the tokenizer's BOS/EOS strings.
ChatRenderOptions chat_options_for(const Tokenizer& tok, bool add_generation_prompt = true);

// Renders `messages`. Throws rlf::Error for an unknown role (or a role the
// format cannot express).
std::string render_chat(ChatFormat format, std::span<const ChatMessage> messages, const ChatRenderOptions& options);

}  // namespace rlf

// Prompt templates and chat rendering (see prompt_format.h).
#include "data/prompt_format.h"

#include <vector>

#include "tokenizer/tokenizer.h"
#include "util/fs.h"

namespace rlf {

namespace {

bool is_ident_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_ident_char(char c) { return is_ident_start(c) || (c >= '0' && c <= '9'); }

// The length of "{identifier}" starting at text[i] == '{', or 0.
size_t placeholder_length(std::string_view text, size_t i) {
  size_t j = i + 1;
  if (j >= text.size() || !is_ident_start(text[j])) return 0;
  while (j < text.size() && is_ident_char(text[j])) ++j;
  return j < text.size() && text[j] == '}' ? j - i + 1 : 0;
}

std::string field_text(const Json& value) { return value.is_string() ? value.get<std::string>() : value.dump(); }

// tokenizer_config.json writes special tokens as "x" or {"content": "x", ...}.
std::string special_token(const Json& config, const char* key) {
  auto it = config.find(key);
  if (it == config.end() || it->is_null()) return "";
  if (it->is_string()) return it->get<std::string>();
  if (it->is_object() && it->contains("content") && (*it)["content"].is_string()) return (*it)["content"].get<std::string>();
  return "";
}

}  // namespace

TokenizerChat tokenizer_chat_of(const Tokenizer& tok) {
  ChatRenderOptions o = chat_options_for(tok);
  return {tok.chat_template(), o.bos_token, o.eos_token, tok.name().empty() ? std::string("the tokenizer") : str("tokenizer '", tok.name(), "'")};
}

TokenizerChat read_tokenizer_chat(const std::string& path) {
  fs::path file = fs::is_directory(path) ? fs::path(path) / "tokenizer_config.json" : fs::path(path);
  Json config = read_json_file(file.string());
  TokenizerChat chat;
  chat.source = str("'", file.string(), "'");
  auto it = config.find("chat_template");
  if (it != config.end() && it->is_string()) chat.jinja_template = it->get<std::string>();
  // A list of named templates: use the "default" one.
  if (it != config.end() && it->is_array())
    for (const Json& t : *it)
      if (t.is_object() && t.value("name", "") == "default") chat.jinja_template = t.value("template", "");
  chat.bos_token = special_token(config, "bos_token");
  chat.eos_token = special_token(config, "eos_token");
  return chat;
}

PromptFormatter::PromptFormatter(const PromptFormatOptions& options, const TokenizerChat* tokenizer) : options_(options) {
  const std::string& name = options.chat_template;
  if (name.empty()) return;
  if (name == "auto") {
    check(tokenizer != nullptr, "chat_template = \"auto\" needs the model's tokenizer (tokenizer_config.json); ",
          "name a format instead (plain, chatml, qwen2, llama3, llama31, llama2, phi3) or \"\" for none");
    if (tokenizer->jinja_template.empty()) return;  // a base model: no chat markup
    format_ = detect_chat_format(tokenizer->jinja_template);
    check(format_.has_value(), "chat_template = \"auto\": the chat template of ", tokenizer->source,
          " is not one rlf recognises; set chat_template to a format name (plain, chatml, qwen2, llama3, llama31, ",
          "llama2, phi3) or \"\" for none");
  } else {
    format_ = with_context("chat_template", [&] { return parse_chat_format(name); });
  }
  if (tokenizer) {
    render_.bos_token = tokenizer->bos_token;
    render_.eos_token = tokenizer->eos_token;
  }
  // Fail now, not on every record, when the format cannot express the
  // messages (Phi-3's template has no system role).
  with_context("chat_template '" + name + "' with system_prompt", [&] { return render(""); });
}

std::string PromptFormatter::user_message(const std::string& prompt, const Json& record, const std::string& where) const {
  std::string_view t = options_.prompt_template;
  std::string out;
  out.reserve(t.size() + prompt.size());
  for (size_t i = 0; i < t.size();) {
    size_t n = t[i] == '{' ? placeholder_length(t, i) : 0;
    if (n == 0) {
      out += t[i++];
      continue;
    }
    std::string name(t.substr(i + 1, n - 2));
    if (name == "prompt") {
      out += prompt;
    } else {
      auto it = record.find(name);
      check(it != record.end() && !it->is_null(), where, ": prompt_template names field '", name,
            "', which this record lacks");
      out += field_text(*it);
    }
    i += n;
  }
  return out;
}

std::string PromptFormatter::render(const std::string& user_message) const {
  if (!format_) return options_.system_prompt.empty() ? user_message : options_.system_prompt + "\n\n" + user_message;
  std::vector<ChatMessage> messages;
  if (!options_.system_prompt.empty()) messages.push_back({"system", options_.system_prompt});
  messages.push_back({"user", user_message});
  return render_chat(*format_, messages, render_);
}

std::optional<ChatFormat> conversation_format(const std::string& name, const Tokenizer& tok) {
  if (name == "none") return std::nullopt;
  TokenizerChat tc = tokenizer_chat_of(tok);
  if (name == "auto" && tc.jinja_template.empty()) return ChatFormat::Plain;
  PromptFormatOptions o;
  o.chat_template = name;
  return PromptFormatter(o, &tc).chat_format();
}

}  // namespace rlf

// Chat formats (see chat_template.h).
#include "tokenizer/chat_template.h"

#include "tokenizer/tokenizer.h"
#include "util/error.h"

namespace rlf {

namespace {

constexpr const char* kQwenDefaultSystem = "You are Qwen, created by Alibaba Cloud. You are a helpful assistant.";

// Jinja's |trim: strips leading and trailing whitespace.
std::string trim(const std::string& s) {
  const char* ws = " \t\n\r\f\v";
  size_t b = s.find_first_not_of(ws);
  if (b == std::string::npos) return "";
  size_t e = s.find_last_not_of(ws);
  return s.substr(b, e - b + 1);
}

void check_role(const ChatMessage& m, ChatFormat format) {
  check(m.role == "system" || m.role == "user" || m.role == "assistant", "chat format '", chat_format_name(format),
        "': unknown role '", m.role, "' (expected system, user or assistant)");
}

std::string render_chatml(std::span<const ChatMessage> messages, const ChatRenderOptions& o, const char* default_system) {
  std::string out;
  if (default_system && (messages.empty() || messages[0].role != "system"))
    out += std::string("<|im_start|>system\n") + default_system + "<|im_end|>\n";
  for (const ChatMessage& m : messages) out += "<|im_start|>" + m.role + "\n" + m.content + "<|im_end|>\n";
  if (o.add_generation_prompt) out += "<|im_start|>assistant\n";
  return out;
}

std::string render_llama3(std::span<const ChatMessage> messages, const ChatRenderOptions& o, bool system_header) {
  std::string out = o.bos_token;
  if (system_header) {
    std::string system;
    if (!messages.empty() && messages[0].role == "system") {
      system = trim(messages[0].content);
      messages = messages.subspan(1);
    }
    out += "<|start_header_id|>system<|end_header_id|>\n\nCutting Knowledge Date: December 2023\nToday Date: " +
           o.date_string + "\n\n" + system + "<|eot_id|>";
  }
  for (const ChatMessage& m : messages)
    out += "<|start_header_id|>" + m.role + "<|end_header_id|>\n\n" + trim(m.content) + "<|eot_id|>";
  if (o.add_generation_prompt) out += "<|start_header_id|>assistant<|end_header_id|>\n\n";
  return out;
}

// Meta's Llama-2-chat template (add_generation_prompt has no effect there).
std::string render_llama2(std::span<const ChatMessage> messages, const ChatRenderOptions& o) {
  std::string system;
  bool has_system = !messages.empty() && messages[0].role == "system";
  if (has_system) {
    system = messages[0].content;
    messages = messages.subspan(1);
  }
  std::string out;
  for (size_t i = 0; i < messages.size(); ++i) {
    const ChatMessage& m = messages[i];
    std::string content = m.content;
    if (i == 0 && has_system) content = "<<SYS>>\n" + system + "\n<</SYS>>\n\n" + content;
    if (m.role == "user") {
      out += o.bos_token + "[INST] " + trim(content) + " [/INST]";
    } else if (m.role == "assistant") {
      out += ' ';
      out += trim(content);
      out += ' ';
      out += o.eos_token;
    } else {
      fail("chat format 'llama2': a system message is only allowed first");
    }
  }
  return out;
}

std::string render_phi3(std::span<const ChatMessage> messages, const ChatRenderOptions& o) {
  std::string out = o.bos_token;
  for (const ChatMessage& m : messages) {
    if (m.role == "user") out += "<|user|>\n" + m.content + "<|end|>\n<|assistant|>\n";
    else if (m.role == "assistant") out += m.content + "<|end|>\n";
    else fail("chat format 'phi3': role '", m.role, "' is not rendered by Phi-3's template (only user and assistant)");
  }
  return out;
}

std::string render_plain(std::span<const ChatMessage> messages, const ChatRenderOptions& o) {
  std::string out;
  for (const ChatMessage& m : messages) {
    std::string label = m.role == "system" ? "System" : m.role == "user" ? "User" : "Assistant";
    out += label + ": " + m.content + "\n\n";
  }
  if (o.add_generation_prompt) out += "Assistant:";
  return out;
}

}  // namespace

ChatFormat parse_chat_format(std::string_view name) {
  if (name == "plain") return ChatFormat::Plain;
  if (name == "chatml") return ChatFormat::ChatML;
  if (name == "qwen2" || name == "qwen" || name == "qwen2.5") return ChatFormat::Qwen2;
  if (name == "llama3") return ChatFormat::Llama3;
  if (name == "llama31" || name == "llama3.1" || name == "llama3.2") return ChatFormat::Llama31;
  if (name == "llama2") return ChatFormat::Llama2;
  if (name == "phi3") return ChatFormat::Phi3;
  fail("unknown chat format '", std::string(name), "' (expected plain, chatml, qwen2, llama3, llama31, llama2 or phi3)");
}

std::string chat_format_name(ChatFormat format) {
  switch (format) {
    case ChatFormat::Plain: return "plain";
    case ChatFormat::ChatML: return "chatml";
    case ChatFormat::Qwen2: return "qwen2";
    case ChatFormat::Llama3: return "llama3";
    case ChatFormat::Llama31: return "llama31";
    case ChatFormat::Llama2: return "llama2";
    case ChatFormat::Phi3: return "phi3";
  }
  return "?";
}

std::optional<ChatFormat> detect_chat_format(std::string_view t) {
  auto has = [&](const char* marker) { return t.find(marker) != std::string_view::npos; };
  if (has("<|start_header_id|>")) return has("Cutting Knowledge Date") ? ChatFormat::Llama31 : ChatFormat::Llama3;
  if (has("<|im_start|>")) return has("You are Qwen") ? ChatFormat::Qwen2 : ChatFormat::ChatML;
  if (has("[INST]")) return ChatFormat::Llama2;
  if (has("<|user|>") && has("<|end|>")) return ChatFormat::Phi3;
  return std::nullopt;
}

ChatRenderOptions chat_options_for(const Tokenizer& tok, bool add_generation_prompt) {
  ChatRenderOptions o;
  o.add_generation_prompt = add_generation_prompt;
  if (auto bos = tok.bos_id()) o.bos_token = tok.token_string(*bos);
  if (auto eos = tok.eos_id()) o.eos_token = tok.token_string(*eos);
  return o;
}

std::string render_chat(ChatFormat format, std::span<const ChatMessage> messages, const ChatRenderOptions& options) {
  for (const ChatMessage& m : messages) check_role(m, format);
  switch (format) {
    case ChatFormat::Plain: return render_plain(messages, options);
    case ChatFormat::ChatML: return render_chatml(messages, options, nullptr);
    case ChatFormat::Qwen2: return render_chatml(messages, options, kQwenDefaultSystem);
    case ChatFormat::Llama3: return render_llama3(messages, options, false);
    case ChatFormat::Llama31: return render_llama3(messages, options, true);
    case ChatFormat::Llama2: return render_llama2(messages, options);
    case ChatFormat::Phi3: return render_phi3(messages, options);
  }
  fail("unknown chat format");
}

}  // namespace rlf

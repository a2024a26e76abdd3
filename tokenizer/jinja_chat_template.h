// A model's own Jinja chat template, rendered exactly as transformers'
// apply_chat_template(tokenize=False) renders it: the same variables
// (messages, tools, documents, add_generation_prompt, the tokenizer's special
// tokens, extra keyword arguments such as enable_thinking), the same globals
// (raise_exception, strftime_now) and the same engine settings (tokenizer/jinja/).
// The fixed formats of chat_template.h remain the fallback for models
// without a template. See docs/chat_templates.md.
//
//   auto tmpl = JinjaChatTemplate::load("models/qwen3");   // dir, tokenizer_config.json or .jinja
//   ChatInput in = parse_chat_input(R"({"messages": [{"role": "user", "content": "Hi"}],
//                                       "add_generation_prompt": true})", "inline");
//   RenderedChat out = tmpl.render(in, {});   // out.text, out.generation (loss-mask spans)
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tokenizer/jinja/template.h"

namespace rlf {

using OrderedJson = nlohmann::ordered_json;

// What apply_chat_template receives (key order is kept: tool schemas and
// arguments print in the order they were written).
struct ChatInput {
  OrderedJson messages = OrderedJson::array();  // [{"role", "content", "tool_calls", "reasoning_content", ...}]
  OrderedJson tools;                            // null, or OpenAI function schemas
  OrderedJson documents;                        // null, or [{"title", "text"}, ...]
  bool add_generation_prompt = false;
  std::optional<std::string> bos_token;         // override the template's own special tokens
  std::optional<std::string> eos_token;
  OrderedJson kwargs = OrderedJson::object();   // extra template variables: {"enable_thinking": false}
};

// Parses {"messages": [...], "tools": [...], "documents": [...],
// "add_generation_prompt": bool, "bos_token": "...", "eos_token": "...",
// "kwargs": {...}} (all but messages optional); errors name `source` and the key.
ChatInput parse_chat_input(const std::string& json_text, const std::string& source);

// The transformers release whose input handling to reproduce. Both render
// with the same engine; 5.x (today's) also drops message keys whose value is
// null and copies a message's reasoning between `reasoning_content`,
// `thinking` and `reasoning` before rendering.
enum class TransformersCompat { V4, V5 };
TransformersCompat parse_transformers_compat(const std::string& name);  // "4" or "5"

struct CalendarDate {
  int year = 0, month = 0, day = 0;
};
// "YYYY-MM-DD"; throws naming `key` on anything else.
CalendarDate parse_calendar_date(const std::string& text, const std::string& key);

struct ChatRenderSettings {
  std::optional<CalendarDate> date;  // strftime_now's date (midnight); nullopt: the current local time
  TransformersCompat compat = TransformersCompat::V5;
};

struct RenderedChat {
  std::string text;
  std::vector<jinja::GenerationSpan> generation;  // byte spans written inside {% generation %}
};

class JinjaChatTemplate {
 public:
  // Parses the template(s) (a syntax error throws jinja::Error). A template with its special tokens (bos_token, eos_token, unk_token,
  // pad_token: what transformers passes from special_tokens_map). `named`
  // holds the alternatives of a tokenizer_config.json that lists several
  // ({"default": ..., "tool_use": ...}); `source` is the default one.
  JinjaChatTemplate(std::string source, std::map<std::string, std::string> special_tokens,
                    std::map<std::string, std::string> named = {}, std::string origin = "template");

  // From a .jinja file, a tokenizer_config.json, or a model directory
  // (chat_template.jinja first, then tokenizer_config.json). Throws rlf::Error
  // naming the file when there is no template.
  static JinjaChatTemplate load(const std::string& path);

  // Renders `input`. Throws jinja::Error: kind Raised carries the template's
  // own raise_exception message.
  RenderedChat render(const ChatInput& input, const ChatRenderSettings& settings) const;

  // The template text used for `input` (tool_use when tools are given and the
  // config has one, as transformers' get_chat_template picks).
  const std::string& source_for(const ChatInput& input) const;
  const std::string& source() const { return source_; }  // the default template
  const std::map<std::string, std::string>& special_tokens() const { return special_tokens_; }
  // Adds the tokenizer's special tokens the template came without (a .jinja
  // file has none; transformers passes the tokenizer's special_tokens_map).
  void add_missing_special_tokens(const std::map<std::string, std::string>& tokens);
  const std::string& origin() const { return origin_; }

 private:
  std::string source_;
  std::map<std::string, std::string> special_tokens_;
  std::map<std::string, std::string> named_;
  std::string origin_;
  std::map<std::string, std::shared_ptr<const jinja::Template>> parsed_;  // by source text
};

}  // namespace rlf

// rlf's Jinja engine, entry point: parse a template once, render it with
// variables as many times as needed. The engine reproduces jinja2 3.1 as
// transformers configures it for chat templates (ImmutableSandboxedEnvironment,
// trim_blocks, lstrip_blocks, loop controls, {% generation %}); the chat
// globals raise_exception and strftime_now are added by the caller
// (tokenizer/jinja_chat_template.h). See docs/chat_templates.md.
//
//   jinja::Template t("{% for m in messages %}{{ m.role }}: {{ m.content }}\n{% endfor %}");
//   auto out = t.render({{"messages", jinja::from_json(messages_json)}});
#pragma once

#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "tokenizer/jinja/interpreter.h"
#include "tokenizer/jinja/value.h"

namespace rlf::jinja {

struct Rendered {
  std::string text;
  std::vector<GenerationSpan> generation;  // {% generation %} spans, in order
};

class Template {
 public:
  // Parses `source`; throws jinja::Error (Syntax, with the line) on bad syntax.
  explicit Template(const std::string& source);

  // Renders with `variables` over jinja2's default globals (range, dict,
  // namespace, cycler, joiner); throws jinja::Error.
  Rendered render(const std::unordered_map<std::string, Value>& variables, InterpreterOptions options = {}) const;

 private:
  std::shared_ptr<const TemplateAst> ast_;
};

// JSON (key order kept) <-> values: objects become dicts, arrays lists.
Value from_json(const nlohmann::ordered_json& j);

}  // namespace rlf::jinja

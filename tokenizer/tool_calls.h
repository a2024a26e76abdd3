// A model's tool-call text parsed into OpenAI tool calls, for the formats
// model families were trained to write:
//
//   hermes       <tool_call>\n{"name": "f", "arguments": {...}}\n</tool_call>   (Qwen2.5/3, Hermes,
//                one block per call; text outside the blocks is the content)
//   llama3_json  {"name": "f", "parameters": {...}}   (Llama 3.1-3.3: the whole message, optionally
//                after <|python_tag|>; several calls separated by ";")
//   mistral      [TOOL_CALLS][{"name": "f", "arguments": {...}}, ...]   or, with newer tokenizers,
//                [TOOL_CALLS]f[ARGS]{...}  (repeated for several calls)
//
// Text that starts a call but does not parse (bad JSON, no name, no closing
// tag) is returned as content with no calls: a malformed call is never an
// error. detect_tool_call_format() picks the format from a chat template's
// own text. ToolCallStream does the same incrementally for streamed output:
// it releases text that cannot be part of a call at once and holds the rest.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace rlf {

enum class ToolCallFormat { Hermes, Llama3Json, Mistral };

// "hermes" (also "qwen"), "llama3_json" (also "llama3"), "mistral"; throws
// rlf::Error listing them.
ToolCallFormat parse_tool_call_format(const std::string& name);
std::string tool_call_format_name(ToolCallFormat f);

// The format a chat template teaches (its own markers), or nullopt.
std::optional<ToolCallFormat> detect_tool_call_format(const std::string& template_source);

struct ToolCall {
  std::string name;
  nlohmann::ordered_json arguments = nlohmann::ordered_json::object();  // as the model wrote them
  // OpenAI's wire form of the arguments: a JSON string.
  std::string arguments_json() const;
};

struct ParsedOutput {
  std::string content;          // the text that is not a call (whitespace-trimmed when calls were found)
  std::vector<ToolCall> calls;  // empty: no calls, or a malformed one (then content is the whole text)
  std::string malformed;        // why a call-like text was not parsed; "" = it was, or there was none
};

ParsedOutput parse_tool_calls(ToolCallFormat format, const std::string& text);

// Incremental parsing of a streamed completion.
class ToolCallStream {
 public:
  explicit ToolCallStream(ToolCallFormat format) : format_(format) {}
  // Appends `delta`; returns the text that is certainly content (may be "").
  std::string push(const std::string& delta);
  // At the end of the completion: the calls, and content held back that
  // turned out not to be a call (a malformed call included).
  ParsedOutput finish();

 private:
  ToolCallFormat format_;
  std::string all_;       // everything pushed
  size_t released_ = 0;   // bytes of all_ returned as content
  bool in_call_ = false;  // a call has started: hold everything from here
};

}  // namespace rlf

// Chat completions with the model's own Jinja chat template: the request's
// messages (system/developer, user, assistant with tool_calls, tool), tools
// and tool_choice turned into what apply_chat_template receives, and the
// model's tool-call text turned back into OpenAI tool_calls.
//
// As vLLM does, an assistant message's tool_calls[].function.arguments (a
// JSON string on the wire) is given to the template as an object, the form
// chat templates iterate and serialise. tool_choice "auto" (the default when
// tools are given) parses the completion with the model's tool-call format;
// "none" renders the tools but parses nothing; "required" and a named
// function need constrained decoding, which rlf does not have: they are 400s.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "tokenizer/jinja_chat_template.h"
#include "tokenizer/tool_calls.h"
#include "util/json_util.h"

namespace rlf {

struct ChatPrompt {
  std::string text;                               // the rendered prompt (special tokens as text)
  std::optional<ToolCallFormat> tool_format;      // parse the completion's tool calls with this
};

// Renders the "messages", "tools" and "tool_choice" of `body` (parsed with
// key order kept). `tool_format` is the served model's (nullopt: requests
// with tools are refused). Throws ApiError (400) naming the field at fault,
// with a template's own raise_exception message.
ChatPrompt render_chat_request(const OrderedJson& body, const JinjaChatTemplate& tmpl,
                               const ChatRenderSettings& settings, std::optional<ToolCallFormat> tool_format);

// The id of call `k` of choice `choice` in response `response_id`:
// 9 letters and digits for Mistral (its templates require them), else "call_" + 24 hex digits.
std::string tool_call_id(ToolCallFormat format, const std::string& response_id, int64_t choice, size_t k);

// OpenAI's tool_calls array; `with_index` adds "index" (stream deltas).
Json tool_calls_json(const std::vector<ToolCall>& calls, ToolCallFormat format, const std::string& response_id,
                     int64_t choice, bool with_index);

}  // namespace rlf

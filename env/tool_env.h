// Tools in the model's own language: tools are declared as OpenAI function
// schemas and shown to the policy by its own Jinja chat template; the policy
// calls them in its own tool-call format (tokenizer/tool_calls.h: Hermes/Qwen
// <tool_call>, Llama 3 JSON, Mistral [TOOL_CALLS]); each result goes back in
// the template's tool role.
//
//   reset:  the prompt = the template's rendering of [system,] user(task) with
//           the tools, ending with the generation prompt
//   step:   a turn with tool calls -> each tool runs; the observation is the
//           bridge (tokenizer/chat_turns.h): the text after the turn's stop
//           token through the next generation prompt, with the tool messages
//           in it. A turn without a call is the answer: the episode ends.
//
// Token-exact: the episode keeps the ids the policy sampled and appends the
// bridge's ids, so history is never re-rendered (templates that drop earlier
// reasoning or re-serialise calls are fine). Only the policy's tokens train:
// observations have loss weight 0.
//
// Tools: built-ins "calculator" (exact + - * / on integers, data/countdown.h)
// and "python" (a snippet run in rlf's sandbox, sandbox/sandbox.h; its stdout
// is the result), and any tools an external program offers over JSON lines:
//   {"type": "list_tools"}                         -> {"tools": [OpenAI function schemas]}
//   {"type": "call", "name": ..., "arguments": {...}} -> {"content": "result text"} or {"error": "why"}
// A call to an unknown tool, with bad arguments, or beyond max_calls is a
// tool error (its message is the tool result; beyond max_calls the episode ends).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "env/environment.h"
#include "tokenizer/jinja_chat_template.h"
#include "tokenizer/tool_calls.h"

namespace rlf {

struct ToolEnvOptions {
  std::vector<std::string> tools = {"calculator"};  // built-ins: calculator, python
  std::vector<std::string> external_command;         // a program offering more tools (argv); empty = none
  double external_timeout_s = 30.0;                  // per external call, seconds
  std::string chat_template = "auto";                // "auto" = the policy tokenizer's own; a .jinja /
                                                     // tokenizer_config.json / model directory path; or the
                                                     // template text itself (anything with "{{" or "{%")
  std::string tool_parser = "auto";                  // "auto" (from the template), hermes, llama3_json, mistral
  std::vector<std::string> stop;                     // the model's end-of-turn text; default: inferred from
                                                     // the template and tokenizer (e.g. "<|im_end|>")
  int64_t max_calls = 4;                             // tool calls per episode; one more ends it (a tool error)
  std::string system_prompt;                         // "" = no system message
  std::string date;                                  // strftime_now's date YYYY-MM-DD; "" = today
  double python_timeout_s = 5.0;                     // the python tool's wall-clock limit, seconds

  // Throws rlf::Error naming env.<key>.
  void validate() const;
};

// One tool: its schema and what a call returns.
struct ToolResult {
  std::string content;
  bool error = false;
};

class Tool {
 public:
  virtual ~Tool() = default;
  virtual OrderedJson schema() const = 0;  // {"type": "function", "function": {"name", "description", "parameters"}}
  virtual ToolResult call(const OrderedJson& arguments) = 0;
};

// A built-in tool by name ("calculator", "python"); throws naming the valid ones.
std::unique_ptr<Tool> make_builtin_tool(const std::string& name, const ToolEnvOptions& options);

class ToolEnvironment final : public Environment {
 public:
  explicit ToolEnvironment(ToolEnvOptions options);
  ~ToolEnvironment() override;
  std::string name() const override { return "tools"; }
  std::unique_ptr<EnvironmentSession> reset(const PromptExample& task, uint64_t seed,
                                            std::string* first_observation) override;
  // Loads the chat template ("auto": the tokenizer's) and infers the stop text.
  void use_tokenizer(std::shared_ptr<const Tokenizer> tok) override;

  // The tools' schemas, as the template is given them.
  const OrderedJson& tool_schemas() const { return schemas_; }
  const JinjaChatTemplate& chat_template() const;
  const std::vector<std::string>& stop_texts() const { return stop_; }
  ToolCallFormat tool_format() const { return *format_; }
  ChatRenderSettings render_settings() const;
  // Runs one call (a tool error for an unknown name).
  ToolResult run(const ToolCall& call);

 private:
  ToolEnvOptions options_;
  std::vector<std::unique_ptr<Tool>> tools_;
  OrderedJson schemas_ = OrderedJson::array();
  std::shared_ptr<const Tokenizer> tok_;
  std::unique_ptr<JinjaChatTemplate> template_;
  std::optional<ToolCallFormat> format_;
  std::vector<std::string> stop_;
};

}  // namespace rlf

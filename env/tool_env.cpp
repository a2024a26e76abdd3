#include "env/tool_env.h"

#include <algorithm>

#include "data/countdown.h"
#include "data/prompt_format.h"
#include "rewards/scorer_process.h"
#include "sandbox/sandbox.h"
#include "tokenizer/chat_turns.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"

namespace rlf {
namespace {

OrderedJson function_schema(const std::string& name, const std::string& description, const OrderedJson& properties,
                            const std::vector<std::string>& required) {
  return {{"type", "function"},
          {"function",
           {{"name", name},
            {"description", description},
            {"parameters", {{"type", "object"}, {"properties", properties}, {"required", required}}}}}};
}

// The string argument `key` of a call, or a tool error.
std::optional<std::string> string_arg(const OrderedJson& args, const std::string& key, ToolResult* error) {
  if (args.contains(key) && args[key].is_string()) return args[key].get<std::string>();
  *error = ToolResult{"error: the argument '" + key + "' (a string) is required", true};
  return std::nullopt;
}

class CalculatorTool final : public Tool {
 public:
  OrderedJson schema() const override {
    return function_schema("calculator", "Evaluate an arithmetic expression exactly: integers, + - * / and parentheses.",
                           {{"expression", {{"type", "string"}, {"description", "e.g. 347*58"}}}}, {"expression"});
  }
  ToolResult call(const OrderedJson& args) override {
    ToolResult bad;
    auto e = string_arg(args, "expression", &bad);
    if (!e) return bad;
    ExactValue v = evaluate_exact(*e);
    return v.ok ? ToolResult{v.value, false} : ToolResult{"error: " + v.reason, true};
  }
};

class PythonTool final : public Tool {
 public:
  explicit PythonTool(double timeout_s) { options_.timeout_s = timeout_s; }
  OrderedJson schema() const override {
    return function_schema("python", "Run a Python 3 program in a sandbox (no network, no files kept); returns what it prints.",
                           {{"code", {{"type", "string"}, {"description", "the program; print the result"}}}}, {"code"});
  }
  ToolResult call(const OrderedJson& args) override {
    ToolResult bad;
    auto code = string_arg(args, "code", &bad);
    if (!code) return bad;
    const sandbox::ExecResult r = sandbox::run_python(*code, options_);
    if (r.status == sandbox::ExecStatus::ok) return {r.stdout_text, false};
    std::string why = std::string(sandbox::status_name(r.status)) + (r.note.empty() ? "" : " (" + r.note + ")");
    return {r.stdout_text + r.stderr_text + "error: " + why, true};
  }

 private:
  sandbox::SandboxOptions options_;
};

// The tools an external program offers, sharing its process.
class ExternalTools {
 public:
  ExternalTools(std::vector<std::string> command, double timeout_s) : timeout_s_(timeout_s) {
    ScorerProcessOptions o;
    o.command = std::move(command);
    o.label = "tools";
    process_ = std::make_unique<ScorerProcess>(o);
    process_->start();
  }
  OrderedJson request(const OrderedJson& message) {
    const ScorerExchange x = process_->exchange(message.dump(), timeout_s_);
    check(x.ok, "the external tool program failed: ", x.error);
    try {
      return OrderedJson::parse(x.reply);
    } catch (const std::exception& e) {
      fail("the external tool program replied with invalid JSON: ", e.what());
    }
  }

 private:
  double timeout_s_;
  std::unique_ptr<ScorerProcess> process_;
};

class ExternalTool final : public Tool {
 public:
  ExternalTool(std::shared_ptr<ExternalTools> process, OrderedJson schema)
      : process_(std::move(process)), schema_(std::move(schema)) {}
  OrderedJson schema() const override { return schema_; }
  ToolResult call(const OrderedJson& args) override {
    OrderedJson reply;
    try {
      reply = process_->request({{"type", "call"}, {"name", schema_["function"]["name"]}, {"arguments", args}});
    } catch (const Error& e) {
      return {std::string("error: ") + e.what(), true};
    }
    if (reply.contains("error") && reply["error"].is_string()) return {"error: " + reply["error"].get<std::string>(), true};
    if (reply.contains("content") && reply["content"].is_string()) return {reply["content"].get<std::string>(), false};
    return {"error: the tool program's reply has no \"content\" string", true};
  }

 private:
  std::shared_ptr<ExternalTools> process_;
  OrderedJson schema_;
};

class ToolSession final : public EnvironmentSession {
 public:
  ToolSession(ToolEnvironment& env, const ToolEnvOptions& options, ChatInput conversation)
      : env_(env), options_(options), conversation_(std::move(conversation)) {}

  EnvStep step(const PolicyTurn& turn) override {
    EnvStep s;
    const ParsedOutput parsed = parse_tool_calls(env_.tool_format(), turn.text);
    if (parsed.calls.empty()) {
      s.done = true;  // an answer
      if (!parsed.malformed.empty()) s.feedback = "malformed tool call: " + parsed.malformed;
      return s;
    }
    s.tool_call = true;
    OrderedJson assistant = {{"role", "assistant"}, {"content", parsed.content}, {"tool_calls", OrderedJson::array()}};
    OrderedJson results = OrderedJson::array();
    for (const ToolCall& call : parsed.calls) {
      if (++n_calls_ > options_.max_calls) {
        s.tool_error = true;
        s.done = true;
        s.feedback = str("more than ", options_.max_calls, " tool calls");
        return s;
      }
      const std::string id = str("call_", n_calls_);
      assistant["tool_calls"].push_back(
          {{"id", id}, {"type", "function"}, {"function", {{"name", call.name}, {"arguments", call.arguments}}}});
      const ToolResult r = env_.run(call);
      s.tool_error = s.tool_error || r.error;
      results.push_back({{"role", "tool"}, {"tool_call_id", id}, {"name", call.name}, {"content", r.content}});
    }
    conversation_.messages.push_back(assistant);
    const std::vector<std::string>& stops = env_.stop_texts();
    // A turn that did not end with the model's stop token (a stop string, the
    // token limit) gets it first, so the bridge follows a complete turn.
    const bool ended = turn.stop == "eos" || std::find(stops.begin(), stops.end(), turn.stop) != stops.end();
    s.observation = (ended ? "" : stops.front()) +
                    render_bridge(env_.chat_template(), conversation_, results, stops, env_.render_settings());
    for (const auto& m : results) conversation_.messages.push_back(m);
    return s;
  }

 private:
  ToolEnvironment& env_;
  const ToolEnvOptions& options_;
  ChatInput conversation_;  // what the template is given to render bridges (never re-tokenised)
  int64_t n_calls_ = 0;
};

}  // namespace

void ToolEnvOptions::validate() const {
  check(!tools.empty() || !external_command.empty(), "env.tools: no tools (give built-ins such as [\"calculator\"] or an external_command)");
  check(max_calls > 0, "env.max_calls must be > 0 (got ", max_calls, ")");
  check(external_timeout_s > 0, "env.external_timeout_s must be > 0 (got ", external_timeout_s, ")");
  check(python_timeout_s > 0, "env.python_timeout_s must be > 0 (got ", python_timeout_s, ")");
  if (tool_parser != "auto") with_context("env.tool_parser", [&] { parse_tool_call_format(tool_parser); });
  if (!date.empty()) parse_calendar_date(date, "env.date");
  for (const auto& s : stop) check(!s.empty(), "env.stop: stop texts must be non-empty");
}

std::unique_ptr<Tool> make_builtin_tool(const std::string& name, const ToolEnvOptions& options) {
  if (name == "calculator") return std::make_unique<CalculatorTool>();
  if (name == "python") return std::make_unique<PythonTool>(options.python_timeout_s);
  fail("env.tools: unknown built-in tool '", name, "' (built-ins: calculator, python; other tools come from an external_command)");
}

ToolEnvironment::ToolEnvironment(ToolEnvOptions options) : options_(std::move(options)) {
  options_.validate();
  for (const auto& name : options_.tools) tools_.push_back(make_builtin_tool(name, options_));
  if (!options_.external_command.empty()) {
    auto process = std::make_shared<ExternalTools>(options_.external_command, options_.external_timeout_s);
    const OrderedJson reply = process->request({{"type", "list_tools"}});
    check(reply.contains("tools") && reply["tools"].is_array(),
          "env.external_command: the reply to list_tools must be {\"tools\": [OpenAI function schemas]}");
    for (const auto& schema : reply["tools"]) {
      check(schema.is_object() && schema.contains("function") && schema["function"].contains("name"),
            "env.external_command: a tool schema must be {\"type\": \"function\", \"function\": {\"name\", ...}}");
      tools_.push_back(std::make_unique<ExternalTool>(process, schema));
    }
  }
  std::vector<std::string> names;
  for (const auto& t : tools_) {
    const OrderedJson s = t->schema();
    const std::string name = s["function"]["name"].get<std::string>();
    check(std::find(names.begin(), names.end(), name) == names.end(), "env.tools: two tools are named '", name, "'");
    names.push_back(name);
    schemas_.push_back(s);
  }
  const std::string& t = options_.chat_template;
  if (t.find("{{") != std::string::npos || t.find("{%") != std::string::npos)
    template_ = std::make_unique<JinjaChatTemplate>(t, std::map<std::string, std::string>{},
                                                    std::map<std::string, std::string>{}, "env.chat_template");
  else if (t != "auto")
    template_ = std::make_unique<JinjaChatTemplate>(JinjaChatTemplate::load(t));
}

ToolEnvironment::~ToolEnvironment() = default;

void ToolEnvironment::use_tokenizer(std::shared_ptr<const Tokenizer> tok) {
  tok_ = std::move(tok);
  const TokenizerChat tc = tokenizer_chat_of(*tok_);
  std::map<std::string, std::string> tokens;
  if (!tc.bos_token.empty()) tokens["bos_token"] = tc.bos_token;
  if (!tc.eos_token.empty()) tokens["eos_token"] = tc.eos_token;
  if (!template_) {
    check(!tc.jinja_template.empty(), "env: chat_template = \"auto\" but ", tc.source,
          " has no chat template: give env.chat_template = PATH (a .jinja file)");
    template_ = std::make_unique<JinjaChatTemplate>(tc.jinja_template, tokens, std::map<std::string, std::string>{}, tc.source);
  }
  template_->add_missing_special_tokens(tokens);
  format_ = options_.tool_parser == "auto" ? detect_tool_call_format(template_->source()) : parse_tool_call_format(options_.tool_parser);
  check(format_.has_value(), "env: cannot tell the tool-call format of chat template '", template_->origin(),
        "': give env.tool_parser (hermes, llama3_json or mistral)");
  stop_ = options_.stop.empty() ? infer_stop_texts(*template_, *tok_, render_settings()) : options_.stop;
  check(!stop_.empty(), "env: the chat template writes no special token after an assistant turn: give env.stop "
                        "(the model's end-of-turn text)");
}

const JinjaChatTemplate& ToolEnvironment::chat_template() const {
  check(template_ != nullptr, "the tool environment has no chat template yet (use_tokenizer was not called)");
  return *template_;
}

ChatRenderSettings ToolEnvironment::render_settings() const {
  ChatRenderSettings s;
  if (!options_.date.empty()) s.date = parse_calendar_date(options_.date, "env.date");
  return s;
}

ToolResult ToolEnvironment::run(const ToolCall& call) {
  for (size_t i = 0; i < tools_.size(); ++i)
    if (schemas_[i]["function"]["name"] == call.name) return tools_[i]->call(call.arguments);
  return {"error: there is no tool named '" + call.name + "'", true};
}

std::unique_ptr<EnvironmentSession> ToolEnvironment::reset(const PromptExample& task, uint64_t,
                                                           std::string* first_observation) {
  ChatInput conv;
  conv.tools = schemas_;
  if (!options_.system_prompt.empty()) conv.messages.push_back({{"role", "system"}, {"content", options_.system_prompt}});
  conv.messages.push_back({{"role", "user"}, {"content", task.prompt}});
  conv.add_generation_prompt = true;
  std::string text = chat_template().render(conv, render_settings()).text;
  // The episode producer encodes the prompt with the tokenizer's own BOS when
  // it adds one: a template that writes the BOS text too would double it.
  const auto& tokens = chat_template().special_tokens();
  if (tok_ && tokens.count("bos_token") && tok_->bos_id() && !tokens.at("bos_token").empty() &&
      text.rfind(tokens.at("bos_token"), 0) == 0) {
    const std::vector<int32_t> probe = tok_->encode("x", true);
    if (!probe.empty() && probe.front() == *tok_->bos_id()) text = text.substr(tokens.at("bos_token").size());
  }
  *first_observation = text;
  conv.add_generation_prompt = false;
  return std::make_unique<ToolSession>(*this, options_, std::move(conv));
}

}  // namespace rlf
